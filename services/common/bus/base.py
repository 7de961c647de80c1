"""The bus edge: a Protocol the services program against, with RabbitMQ and in-memory
implementations that pass the same contract suite (tests/contract/test_bus.py).

Delivery semantics (both implementations):

- ``publish`` returns only when the broker has confirmed every message of the call
  (one wait per call, so publish batches, not single messages).
- ``consume`` hands the handler a *batch*: whatever is ready now, at least one message,
  at most ``max_batch``. It never waits for a batch to fill, unless given a ``linger``
  window: then, while deliveries come closer together than the window, a batch's first
  delivery waits up to ``linger`` seconds from its arrival for more (bus.linger).
- ``consume`` decodes every delivery into the consumer's declared type (``decode``,
  one msgspec Decoder built per consumer) and hands the handler :class:`Received`
  values; a delivery that does not decode never reaches the handler: it is
  dead-lettered with the decode error, naming the queue and the type, as the reason.
  ``consume_raw`` hands over the bytes, for a consumer that decodes by itself (the
  informer's watch events, validated field by field) or only inspects messages.
- When the handler returns, every delivery of the batch is acknowledged except the ones
  it returned as :class:`Rejection`, which are dead-lettered to ``ksched.dead`` with the
  reason in the ``x-ksched-reason`` header. Acknowledge means "its effect is durable":
  a handler returns only after it has written what the message caused.
- When the handler raises, deliveries seen for the first time are requeued (they come
  back with ``redelivered=True``); deliveries that were already redelivered are
  dead-lettered with the exception as the reason. A poison message therefore costs at
  most two attempts and never blocks the queue.
- Except when what the handler raised says a dependency is *unavailable*
  (:func:`unavailable`: a publish the broker did not confirm, the connection gone, Redis
  unreachable): the message is not at fault, so the whole batch goes back to the queue
  after a pause (doubling from the bus's first pause up to UNAVAILABLE_MAX_PAUSE) and
  nothing is dead-lettered. A handler whose publish failed must therefore raise, never
  swallow it: its inbound batch is then redelivered, never acknowledged unconfirmed.
- A dead letter carries, besides the reason, the exchange it was published to
  (``x-ksched-exchange``) and the queue it was consumed from (``x-ksched-queue``), so
  it can be inspected (:meth:`Bus.fetch`) and replayed to where it was going.
- Messages of one queue reach one consumer's handler in publish order, one batch at a
  time (the handler is never called concurrently for the same consumer).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Final, Generic, Protocol, TypeVar

import msgspec

from contracts.topology import QueueSpec
from services.common.store.errors import store_failure

UNAVAILABLE_PAUSE: Final = 0.5
"""Seconds a consumer waits before giving back a batch whose handler found a dependency
unavailable (see :func:`unavailable`); doubled after each such failure in a row."""
UNAVAILABLE_MAX_PAUSE: Final = 5.0
"""The longest such pause: a restarted broker or Redis is used within this long."""


@dataclass(frozen=True, slots=True)
class Message:
    """One message to publish."""

    exchange: str
    routing_key: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    traces: Sequence[Mapping[str, str]] = ()
    """The trace contexts (``traceparent`` carriers) of the pods whose items a batch
    message carries in its body, the creation contexts of those items. Without a
    ``traceparent`` header the message travels with the first of them, so the consumer
    continues that pod's trace; the publish span is a child of it and links to the rest
    (see :mod:`services.common.bus.tracing`). Not sent as such."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One received message."""

    body: bytes
    exchange: str
    routing_key: str
    headers: Mapping[str, str]
    redelivered: bool


@dataclass(frozen=True, slots=True)
class Rejection:
    """Dead-letter ``delivery`` (an element of the batch) because of ``reason``."""

    delivery: Delivery
    reason: str


BatchHandler = Callable[[Sequence[Delivery]], Awaitable[Sequence[Rejection] | None]]
"""A raw consumer's handler (:meth:`Bus.consume_raw`): the deliveries' bytes."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Received(Generic[T]):
    """One delivery decoded into the consumer's declared type: ``value``, and the
    ``delivery`` itself (headers, redelivered; the element to reject)."""

    value: T
    delivery: Delivery


Handler = Callable[[Sequence[Received[T]]], Awaitable[Sequence[Rejection] | None]]
"""A typed consumer's handler (:meth:`Bus.consume`): the batch's decodable deliveries,
in order. It may reject any of them (``Rejection(received.delivery, reason)``)."""


def decoding(queue: QueueSpec, decode: type[T], handler: Handler[T]) -> BatchHandler:
    """``handler`` as a raw handler of ``queue``: one Decoder for ``decode``, built
    here, decodes each delivery; those that do not decode are rejected (dead-lettered)
    with the reason ``undecodable on <queue>: not a <type>: <error>`` and the handler
    sees the rest (it is not called when none is left). If the handler raises, the
    whole batch, undecodable ones included, meets the bus's failure rules."""
    decoder = msgspec.json.Decoder(decode)
    expected = getattr(decode, "__name__", repr(decode))

    async def handle(deliveries: Sequence[Delivery]) -> Sequence[Rejection]:
        received: list[Received[T]] = []
        rejections: list[Rejection] = []
        for delivery in deliveries:
            try:
                received.append(Received(decoder.decode(delivery.body), delivery))
            except msgspec.DecodeError as error:  # ValidationError is a DecodeError
                reason = f"undecodable on {queue.name}: not a {expected}: {error}"
                rejections.append(Rejection(delivery, reason))
        if received:
            rejections.extend(await handler(received) or ())
        return rejections

    return handle


class Fetched(Protocol):
    """Messages taken from a queue without a consumer (:meth:`Bus.fetch`): they stay the
    caller's until the block ends; those not removed then go back to the queue, in
    their order, marked redelivered."""

    @property
    def deliveries(self) -> Sequence[Delivery]:
        """The messages taken, in queue order."""

    async def remove(self, deliveries: Iterable[Delivery]) -> None:
        """Acknowledge ``deliveries`` (elements of :attr:`deliveries`): gone for good."""


class Consumer(Protocol):
    async def cancel(self) -> None:
        """Stop delivering; unacknowledged deliveries go back to the queue."""


class Bus(Protocol):
    async def declare(self, queues: Iterable[QueueSpec]) -> None:
        """Declare every exchange of contracts.topology and ``queues`` with their bindings.
        Idempotent; safe to call from every service at start-up."""

    async def publish(self, messages: Sequence[Message]) -> None:
        """Publish and wait for the broker's confirmation of all of them.
        Raises :class:`BusError` if the broker refuses one or the exchange is not in
        contracts.topology. A message no queue is bound for is dropped, as in AMQP."""

    async def consume(
        self,
        queue: QueueSpec,
        handler: Handler[T],
        *,
        decode: type[T],
        max_batch: int = 256,
        prefetch: int | None = None,
        linger: float = 0.0,
    ) -> Consumer:
        """:meth:`consume_raw` with each delivery decoded into ``decode`` (see
        :func:`decoding`): the handler receives :class:`Received` values; what does not
        decode is dead-lettered with the reason. Implementations inherit this one by
        subclassing :class:`Bus`."""
        return await self.consume_raw(
            queue,
            decoding(queue, decode, handler),
            max_batch=max_batch,
            prefetch=prefetch,
            linger=linger,
        )

    async def consume_raw(
        self,
        queue: QueueSpec,
        handler: BatchHandler,
        *,
        max_batch: int = 256,
        prefetch: int | None = None,
        linger: float = 0.0,
    ) -> Consumer:
        """Declare ``queue`` and start calling ``handler`` with batches from it.
        ``prefetch`` bounds the unacknowledged deliveries, and so this consumer's
        memory (back-pressure: the rest waits in the broker). Default
        ``2 * max_batch``: one batch in the handler, the next one ready behind it, so
        the handler never waits a round trip. Where each message is itself a batch
        (``ksched.cluster``), keep ``max_batch`` small. ``linger``: seconds a batch's
        first delivery may wait for more while deliveries come closer together than
        that (:func:`~services.common.bus.linger.linger_deadline`); 0: never waits."""

    def fetch(
        self, queue: QueueSpec, *, limit: int | None = None
    ) -> AbstractAsyncContextManager[Fetched]:
        """Take up to ``limit`` (None: every) ready message of ``queue`` (declared if
        needed) for the duration of the block, for tools that inspect a queue nobody
        consumes (the dead letters). Messages published meanwhile are not taken."""

    async def purge(self, queue: QueueSpec) -> int:
        """Remove every ready message of ``queue``; how many there were."""

    async def close(self) -> None:
        """Cancel every consumer and close the connection."""


def effective_prefetch(max_batch: int, prefetch: int | None) -> int:
    """The prefetch of a consumer (see :meth:`Bus.consume`); raises ValueError below 1."""
    resolved = 2 * max_batch if prefetch is None else prefetch
    if max_batch < 1 or resolved < 1:
        raise ValueError("max_batch and prefetch must be at least 1")
    return resolved


class BusError(RuntimeError):
    """The broker refused a publish or the connection is gone."""


class BusRefused(BusError):
    """The broker refused a message, or it cannot be sent at all (a channel error such
    as access refused, a routing key over 255 bytes): sending the same message again
    will not help, so a handler that raises it is not retried forever. A nack is not a
    refusal but a :class:`BusError`: a clustered broker nacks while a quorum queue has
    no leader, and the same publish succeeds once it has one."""


def unavailable(error: BaseException) -> bool:
    """Whether ``error``, raised by a handler, says a dependency is unavailable rather
    than that its messages are bad: a :class:`BusError` (not :class:`BusRefused`), a
    refused, reset or timed-out connection, an unreachable Redis. Such a batch is
    retried, never dead-lettered."""
    if isinstance(error, BusRefused):
        return False
    return (
        isinstance(error, BusError | ConnectionError | TimeoutError)
        or store_failure(error) == "unreachable"
    )
