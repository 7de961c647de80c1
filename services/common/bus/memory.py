"""In-process :class:`~services.common.bus.base.Bus`: a small AMQP broker in one event loop.

Used by the embedded mode and by tests; it passes the same contract suite as RabbitMQ
(tests/contract/test_bus.py). Routing, prefetch, batching, requeue and dead-lettering
follow the semantics documented in :mod:`services.common.bus.base`.

A message's life in one queue::

    ready ──dispatch (consumer has prefetch credit)──▶ buffered ──batch──▶ in flight
      ▲                                                                     │
      ├── handler raised, first attempt (redelivered=True, at the front) ◀──┤
      ├── handler found a dependency unavailable (after a pause) ◀──────────┤
      ├── consumer cancelled (every buffered/in-flight one, at the front) ◀─┤
      │                                                                     ├─▶ acked (gone)
      └──────────────────── ksched.dead ◀── rejected, or raised again ◀─────┘
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
from collections import deque
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field

from contracts.topology import (
    DEAD,
    EXCHANGES,
    ORIGIN_EXCHANGE_HEADER,
    ORIGIN_QUEUE_HEADER,
    REASON_HEADER,
    ExchangeSpec,
    QueueSpec,
)
from services.common.bus import tracing
from services.common.bus.base import (
    UNAVAILABLE_MAX_PAUSE,
    UNAVAILABLE_PAUSE,
    BatchHandler,
    Bus,
    BusError,
    BusRefused,
    Consumer,
    Delivery,
    Fetched,
    Message,
    Rejection,
    effective_prefetch,
    unavailable,
)
from services.common.bus.linger import linger_deadline

MAX_ROUTING_KEY = 255
"""Bytes in a routing key, as AMQP 0-9-1 allows (a short string)."""
_STABLE_CHECKS = 3
"""Consecutive idle observations, one loop iteration apart, before :meth:`wait_idle` returns."""


def topic_matches(pattern: str, routing_key: str) -> bool:
    """AMQP topic matching: ``*`` is exactly one word, ``#`` zero or more words."""
    return _match(pattern.split("."), 0, routing_key.split("."), 0)


def _match(pattern: list[str], p: int, words: list[str], w: int) -> bool:
    if p == len(pattern):
        return w == len(words)
    if pattern[p] == "#":
        return any(_match(pattern, p + 1, words, i) for i in range(w, len(words) + 1))
    if w == len(words):
        return False
    return pattern[p] in ("*", words[w]) and _match(pattern, p + 1, words, w + 1)


def _routes(exchange: ExchangeSpec, binding_key: str, routing_key: str) -> bool:
    if exchange.type == "topic":
        return topic_matches(binding_key, routing_key)
    return exchange.type == "fanout" or binding_key == routing_key


@dataclass(slots=True)
class _Envelope:
    exchange: str
    routing_key: str
    body: bytes
    headers: dict[str, str]
    redelivered: bool = False
    arrived: float = 0.0
    """When a consumer got it (loop time), and how long after the one before (``gap``):
    for its ``linger`` window (bus.linger)."""
    gap: float = math.inf

    def delivery(self) -> Delivery:
        return Delivery(
            self.body, self.exchange, self.routing_key, dict(self.headers), self.redelivered
        )


@dataclass(slots=True)
class _Queue:
    spec: QueueSpec
    ready: deque[_Envelope] = field(default_factory=deque)
    consumers: list[_MemoryConsumer] = field(default_factory=list)
    turn: int = 0


class MemoryBus(Bus):
    """A :class:`~services.common.bus.base.Bus` held in this process's memory.

    Same contract as the RabbitMQ bus: topic/direct/fanout exchanges from
    ``contracts.topology``, per-consumer prefetch credit, batches of whatever is ready,
    ack when the handler returns, requeue-then-dead-letter on handler errors, and
    messages to an exchange without a matching queue silently dropped. ``publish``
    "confirms" immediately. The instance *is* the broker: queues and their messages
    live as long as it does, so a consumer opened later on the same bus sees what was
    published before. ``namespace`` is accepted for symmetry with ``RabbitBus`` and
    ignored (every MemoryBus is its own namespace). ``unavailable_pause``: the first
    pause before a batch whose handler found a dependency unavailable is given back.

    Extra, for tests and the embedded mode: :meth:`wait_idle` and :meth:`queue_depth`.
    """

    def __init__(
        self, *, namespace: str = "", unavailable_pause: float = UNAVAILABLE_PAUSE
    ) -> None:
        self.namespace = namespace
        self.unavailable_pause = unavailable_pause
        self._exchanges: dict[str, ExchangeSpec] = {spec.name: spec for spec in EXCHANGES}
        self._bindings: dict[str, list[tuple[str, str]]] = {name: [] for name in self._exchanges}
        self._queues: dict[str, _Queue] = {}
        self._consumers: list[_MemoryConsumer] = []
        self._running = 0
        self._changed = asyncio.Event()
        self._closed = False

    async def declare(self, queues: Iterable[QueueSpec]) -> None:
        self._check_open()
        for spec in queues:
            self._declare_queue(spec)

    async def publish(self, messages: Sequence[Message]) -> None:
        self._check_open()
        for message in messages:
            if message.exchange not in self._exchanges:
                raise BusError(f"no exchange {message.exchange!r}")
            if len(message.routing_key.encode()) > MAX_ROUTING_KEY:
                raise BusRefused(f"routing key too long (max {MAX_ROUTING_KEY} bytes)")
        with tracing.sending(messages, system=tracing.MEMORY_SYSTEM) as traced:
            for m in traced:
                self._route(_Envelope(m.exchange, m.routing_key, m.body, dict(m.headers)))
            await asyncio.sleep(0)  # a publish is a suspension point, as on a real broker

    async def consume_raw(
        self,
        queue: QueueSpec,
        handler: BatchHandler,
        *,
        max_batch: int = 256,
        prefetch: int | None = None,
        linger: float = 0.0,
    ) -> Consumer:
        self._check_open()
        prefetch = effective_prefetch(max_batch, prefetch)
        state = self._declare_queue(queue)
        consumer = _MemoryConsumer(self, state, handler, max_batch, prefetch, linger)
        state.consumers.append(consumer)
        self._consumers.append(consumer)
        self._dispatch(state)
        return consumer

    @contextlib.asynccontextmanager
    async def fetch(self, queue: QueueSpec, *, limit: int | None = None) -> AsyncIterator[Fetched]:
        self._check_open()
        state = self._declare_queue(queue)
        count = len(state.ready) if limit is None else min(limit, len(state.ready))
        taken = _MemoryFetched(self, [state.ready.popleft() for _ in range(count)])
        try:
            yield taken
        finally:
            self._requeue(state, taken.kept())
            self._dispatch(state)

    async def purge(self, queue: QueueSpec) -> int:
        self._check_open()
        state = self._declare_queue(queue)
        count = len(state.ready)
        state.ready.clear()
        return count

    async def close(self) -> None:
        self._closed = True
        for consumer in list(self._consumers):
            await consumer.cancel()

    def connected(self) -> bool:
        return not self._closed

    async def wait_idle(self) -> None:
        """Return once the pipeline has quiesced: no handler is running and no queue that
        has a consumer holds a message (ready, prefetched or in flight). Queues nobody
        consumes (``ksched.dead.letters``, say) just keep their messages and do not count.
        The state must hold for a few consecutive loop iterations, so work that a handler
        started with ``create_task`` gets the chance to publish first."""
        stable = 0
        while stable < _STABLE_CHECKS:
            if self._idle():
                stable += 1
                await asyncio.sleep(0)
            else:
                stable = 0
                self._changed.clear()
                await self._changed.wait()

    def queue_depth(self, name: str) -> int:
        """Messages ready in queue ``name`` (not counting prefetched or in-flight ones),
        like RabbitMQ's ``messages_ready``. Raises :class:`KeyError` for no such queue."""
        return len(self._queues[name].ready)

    def _check_open(self) -> None:
        if self._closed:
            raise BusError("bus is closed")

    def _idle(self) -> bool:
        return (
            self._running == 0
            and all(not consumer.buffer and not consumer.in_flight for consumer in self._consumers)
            and all(not state.ready for state in self._queues.values() if state.consumers)
        )

    def _declare_queue(self, spec: QueueSpec) -> _Queue:
        for binding in spec.bindings:
            if binding.exchange not in self._exchanges:
                raise BusError(f"queue {spec.name!r} binds to unknown {binding.exchange!r}")
        state = self._queues.setdefault(spec.name, _Queue(spec))
        for binding in spec.bindings:
            pair = (spec.name, binding.routing_key)
            if pair not in self._bindings[binding.exchange]:
                self._bindings[binding.exchange].append(pair)
        for binding in spec.retired:
            pairs = self._bindings.get(binding.exchange, [])
            if (spec.name, binding.routing_key) in pairs:
                pairs.remove((spec.name, binding.routing_key))
        return state

    def _delete_queue(self, state: _Queue) -> None:
        del self._queues[state.spec.name]
        for pairs in self._bindings.values():
            pairs[:] = [pair for pair in pairs if pair[0] != state.spec.name]

    def _route(self, envelope: _Envelope) -> None:
        exchange = self._exchanges[envelope.exchange]
        targets = dict.fromkeys(
            queue
            for queue, key in self._bindings[exchange.name]
            if _routes(exchange, key, envelope.routing_key)
        )
        for name in targets:
            state = self._queues[name]
            state.ready.append(dataclasses.replace(envelope, headers=dict(envelope.headers)))
            self._dispatch(state)

    def _dispatch(self, state: _Queue) -> None:
        """Hand ready messages to consumers with prefetch credit, round robin."""
        while state.ready:
            eligible = [c for c in state.consumers if c.credit > 0]
            if not eligible:
                break
            consumer = eligible[state.turn % len(eligible)]
            state.turn += 1
            consumer.receive(state.ready.popleft())
        self._changed.set()

    def _dead_letter(self, state: _Queue, envelope: _Envelope, reason: str) -> None:
        if state.spec.dead_letter:
            headers = {
                **envelope.headers,
                REASON_HEADER: reason,
                ORIGIN_EXCHANGE_HEADER: envelope.exchange,
                ORIGIN_QUEUE_HEADER: state.spec.name,
            }
            self._route(_Envelope(DEAD.name, envelope.routing_key, envelope.body, headers))

    def _requeue(self, state: _Queue, envelopes: Iterable[_Envelope]) -> None:
        """Put ``envelopes`` back at the front of the queue, in their order."""
        returned = list(envelopes)
        for envelope in returned:
            envelope.redelivered = True
        if self._queues.get(state.spec.name) is state:
            state.ready.extendleft(reversed(returned))


class _MemoryFetched:
    """What :meth:`MemoryBus.fetch` took: its envelopes and which were removed."""

    def __init__(self, bus: MemoryBus, envelopes: list[_Envelope]) -> None:
        self._bus = bus
        self._envelopes = envelopes
        self._deliveries = [envelope.delivery() for envelope in envelopes]
        self._removed: set[int] = set()

    @property
    def deliveries(self) -> Sequence[Delivery]:
        return self._deliveries

    async def remove(self, deliveries: Iterable[Delivery]) -> None:
        index = {id(d): i for i, d in enumerate(self._deliveries)}
        self._removed.update(index[id(d)] for d in deliveries if id(d) in index)

    def kept(self) -> list[_Envelope]:
        return [e for i, e in enumerate(self._envelopes) if i not in self._removed]


class _MemoryConsumer:
    """One subscription: a task feeding ``handler`` batches from its prefetched buffer."""

    def __init__(
        self,
        bus: MemoryBus,
        state: _Queue,
        handler: BatchHandler,
        max_batch: int,
        prefetch: int,
        linger: float = 0.0,
    ) -> None:
        self._bus = bus
        self._state = state
        self._handler = handler
        self._max_batch = max_batch
        self._prefetch = prefetch
        self._linger = linger
        self._last_arrival = -math.inf
        self.buffer: deque[_Envelope] = deque()
        self.in_flight: list[_Envelope] = []
        self.wake = asyncio.Event()
        self._cancelled = False
        self._pause = bus.unavailable_pause
        self._task = asyncio.create_task(self._run(), name=f"consume:{state.spec.name}")

    @property
    def credit(self) -> int:
        return self._prefetch - len(self.buffer) - len(self.in_flight)

    def receive(self, envelope: _Envelope) -> None:
        now = asyncio.get_running_loop().time()
        envelope.arrived, envelope.gap = now, now - self._last_arrival
        self._last_arrival = now
        self.buffer.append(envelope)
        self.wake.set()

    async def _linger_for_more(self) -> None:
        """With a ``linger`` window, wait (the buffer holding the batch's first) until
        the batch could be full or the window of its first delivery ends."""
        first = self.buffer[0]
        deadline = linger_deadline(self._linger, first.arrived, first.gap)
        loop = asyncio.get_running_loop()
        while deadline is not None and len(self.buffer) < self._max_batch:
            left = deadline - loop.time()
            if left <= 0:
                return
            self.wake.clear()
            try:
                async with asyncio.timeout(left):
                    await self.wake.wait()
            except TimeoutError:
                return

    async def cancel(self) -> None:
        if self._cancelled:
            return
        self._cancelled = True
        self._state.consumers.remove(self)
        self._bus._consumers.remove(self)
        self._task.cancel()
        if self._task is not asyncio.current_task():
            await asyncio.wait([self._task])
        unacked = [*self.in_flight, *self.buffer]
        self.in_flight, self.buffer = [], deque()
        state = self._state
        if not state.consumers and (state.spec.exclusive or state.spec.auto_delete):
            self._bus._delete_queue(state)
        else:
            self._bus._requeue(state, unacked)
        self._bus._dispatch(state)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0)  # let other consumers run even if handlers never suspend
            while not self.buffer:
                self.wake.clear()
                await self.wake.wait()
            await self._linger_for_more()
            size = min(self._max_batch, len(self.buffer))
            self.in_flight = [self.buffer.popleft() for _ in range(size)]
            deliveries = [envelope.delivery() for envelope in self.in_flight]
            self._bus._running += 1
            try:
                try:
                    spec = self._state.spec
                    with tracing.processing(
                        spec.name,
                        deliveries,
                        temporary=spec.exclusive,
                        system=tracing.MEMORY_SYSTEM,
                    ):
                        rejections = await self._handler(deliveries)
                except Exception as exc:
                    if unavailable(exc):
                        await asyncio.sleep(self._pause)
                        self._pause = min(2 * self._pause, UNAVAILABLE_MAX_PAUSE)
                        self._bus._requeue(self._state, self.in_flight)
                    else:
                        self._settle_failure(f"{type(exc).__name__}: {exc}")
                else:
                    self._pause = self._bus.unavailable_pause
                    self._settle(deliveries, rejections or ())
            finally:
                self._bus._running -= 1
            self.in_flight = []
            self._bus._dispatch(self._state)

    def _settle(self, deliveries: Sequence[Delivery], rejections: Sequence[Rejection]) -> None:
        index = {id(delivery): i for i, delivery in enumerate(deliveries)}
        for rejection in rejections:
            i = index.pop(id(rejection.delivery), None)
            if i is not None:
                self._bus._dead_letter(self._state, self.in_flight[i], rejection.reason)

    def _settle_failure(self, reason: str) -> None:
        retry = []
        for envelope in self.in_flight:
            if envelope.redelivered:
                self._bus._dead_letter(self._state, envelope, reason)
            else:
                retry.append(envelope)
        self._bus._requeue(self._state, retry)
