"""The consuming side of :class:`~services.common.bus.rabbit.RabbitBus`: one subscription
per channel (:class:`RabbitConsumer`), whose callback only appends to an inbox that one
task drains in batches into the handler, then settles them; what
:meth:`RabbitBus.fetch` took (:class:`RabbitFetched`); and how an AMQP delivery becomes
a :class:`~services.common.bus.base.Delivery`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage, AbstractQueue

from contracts.topology import QueueSpec
from services.common.bus import tracing
from services.common.bus.base import (
    UNAVAILABLE_MAX_PAUSE,
    BatchHandler,
    BusError,
    Delivery,
    unavailable,
)
from services.common.bus.linger import linger_deadline
from services.common.bus.rabbit_connection import BROKER_ERRORS as _BROKER_ERRORS
from services.common.bus.rabbit_connection import CLOSE_TIMEOUT
from services.common.bus.rabbit_write import cancelling as _cancelling
from services.common.redact import redact

if TYPE_CHECKING:
    from services.common.bus.rabbit import RabbitBus

log = logging.getLogger("services.common.bus.rabbit")


class RabbitConsumer:
    """One subscription on its own channel; never runs the handler concurrently.

    It counts the deliveries it holds (received, not yet settled): the broker's prefetch
    bounds them, and so this consumer's memory. The most it ever held is logged when it
    is cancelled, next to its prefetch."""

    def __init__(
        self,
        bus: RabbitBus,
        spec: QueueSpec,
        channel: AbstractChannel,
        queue: AbstractQueue,
        handler: BatchHandler,
        *,
        max_batch: int,
        prefetch: int,
        linger: float = 0.0,
    ) -> None:
        self._bus = bus
        self._prefetch = prefetch
        self.held = 0
        """Deliveries received and not yet settled (or dropped with their channel)."""
        self.peak = 0
        """The most ever held at once."""
        self._spec = spec
        self._channel = channel
        self._queue = queue
        self._handler = handler
        self._max_batch = max_batch
        self._linger = linger
        self._last_arrival = -math.inf
        self._prefix = bus.broker_name("")
        self._inbox: asyncio.Queue[_Arrived] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._cancelled = False
        self._pause = bus.unavailable_pause

    async def start(self) -> None:
        await self._queue.consume(self._on_message, no_ack=False)
        self._task = asyncio.create_task(self._run(), name=f"consume:{self._spec.name}")

    async def cancel(self) -> None:
        """Stop the handler (a batch it was handling is not acknowledged), close the
        channel: the broker requeues every unacked one. Each step within CLOSE_TIMEOUT (a
        close not confirmed by then goes on in the background: see ChannelCloser)."""
        if self._cancelled:
            return
        self._cancelled = True
        self._bus._consumers.remove(self)
        log.info(
            "consumer of %s: at most %d deliveries held at once (prefetch %d)",
            self._spec.name,
            self.peak,
            self._prefetch,
        )
        if self._task is not None:
            self._task.cancel()
            if self._task is not asyncio.current_task():
                done, _ = await asyncio.wait([self._task], timeout=CLOSE_TIMEOUT)
                if not done:
                    log.warning("handler of %s ignored its cancellation", self._spec.name)
        try:
            await self._bus.closer.close(self._channel, f"consumer of {self._spec.name}")
            if (
                self._spec.exclusive
                and not self._bus._closed
                and not any(c._spec.name == self._spec.name for c in self._bus._consumers)
            ):
                channel = await self._bus._open()
                await channel.queue_delete(self._bus.broker_name(self._spec.name))
        except (*_BROKER_ERRORS, BusError):
            log.warning("consumer of %s: unclean cancel", self._spec.name, exc_info=True)

    async def _on_message(self, message: AbstractIncomingMessage) -> None:
        self.held += 1
        self.peak = max(self.peak, self.held)
        now = asyncio.get_running_loop().time()
        self._inbox.put_nowait(_Arrived(message, now, now - self._last_arrival))
        self._last_arrival = now

    async def _run(self) -> None:
        """Drain the inbox for good: nothing but this consumer's cancellation ends it.
        Any other exception of one round (a CancelledError included: aiormq rejects the
        futures of a channel that closes, a publish confirmation among them, with one)
        is logged and the next round starts; the round's batch goes back to the queue.
        A consumer task that ended there once stopped ingestion silently while aio-pika
        went on restoring its subscription after every reconnection."""
        while True:
            try:
                await self._round()
            except asyncio.CancelledError:
                if self._cancelled or _cancelling():
                    raise
                log.warning(
                    "consumer of %s: a broker operation was cancelled under the handler "
                    "(its channel closed); the batch goes back to the queue",
                    self._spec.name,
                )
            except Exception:
                log.exception("consumer of %s: a round failed; it goes on", self._spec.name)
            else:
                continue
            await asyncio.sleep(self._pause)  # a failure that repeats does not spin
            self._pause = min(2 * self._pause, UNAVAILABLE_MAX_PAUSE)

    async def _round(self) -> None:
        """Take one batch from the inbox, hand it to the handler and settle it."""
        await asyncio.sleep(0)  # fairness when handlers never suspend
        batch = await self._take()
        received = len(batch)
        batch = [message for message in batch if _open(message)]
        self.held -= received - len(batch)
        if not batch:
            return
        try:
            deliveries = [_delivery(message, self._prefix) for message in batch]
            await self._handle(batch, deliveries)
        finally:
            self.held -= len(batch)
            with contextlib.suppress(Exception):  # the broker redelivers them anyway
                await batch[-1].nack(multiple=True, requeue=True)

    async def _take(self) -> list[AbstractIncomingMessage]:
        """The next batch: what the inbox holds, at least one delivery, at most
        ``max_batch``; with a ``linger`` window, more that arrive before it ends
        (bus.linger)."""
        first = await self._inbox.get()
        batch = [first.message]
        deadline = linger_deadline(self._linger, first.at, first.gap)
        loop = asyncio.get_running_loop()
        while len(batch) < self._max_batch:
            if not self._inbox.empty():
                batch.append(self._inbox.get_nowait().message)
                continue
            if deadline is None or (left := deadline - loop.time()) <= 0:
                break
            try:
                async with asyncio.timeout(left):
                    batch.append((await self._inbox.get()).message)
            except TimeoutError:
                break
        return batch

    async def _handle(
        self, batch: Sequence[AbstractIncomingMessage], deliveries: Sequence[Delivery]
    ) -> None:
        retry = False
        try:
            with tracing.processing(
                self._prefix + self._spec.name,
                deliveries,
                temporary=self._spec.exclusive,
                message_ids=[message.message_id for message in batch],
                delivery_tag=batch[0].delivery_tag if len(batch) == 1 else None,
            ):
                rejections = await self._handler(deliveries)
        except Exception as exc:
            retry = True
            if unavailable(exc):
                log.warning(
                    "handler of %s: %s; %d messages go back to the queue in %g s",
                    self._spec.name,
                    redact(f"{type(exc).__name__}: {exc}"),
                    len(batch),
                    self._pause,
                )
                await asyncio.sleep(self._pause)
                self._pause = min(2 * self._pause, UNAVAILABLE_MAX_PAUSE)
                dead = {}
            else:
                log.warning("handler of %s failed", self._spec.name, exc_info=True)
                reason = f"{type(exc).__name__}: {exc}"
                dead = {i: reason for i, d in enumerate(deliveries) if d.redelivered}
        else:
            self._pause = self._bus.unavailable_pause
            index = {id(d): i for i, d in enumerate(deliveries)}
            dead = {
                index[id(r.delivery)]: r.reason for r in rejections or () if id(r.delivery) in index
            }
        try:
            await self._settle(batch, deliveries, dead, retry)
        except Exception as exc:  # this loop must outlive any broker failure
            log.warning(
                "consumer of %s: cannot settle %d messages (%s); the broker redelivers them",
                self._spec.name,
                len(batch),
                redact(repr(exc)),
            )

    async def _settle(
        self,
        batch: Sequence[AbstractIncomingMessage],
        deliveries: Sequence[Delivery],
        dead: dict[int, str],
        retry: bool,
    ) -> None:
        """Dead-letter ``dead`` (batch index → reason), then ack the rest or, on ``retry``,
        nack them back to the queue."""
        if dead and self._spec.dead_letter:
            await self._bus._dead_letter(
                self._spec, [(deliveries[i], dead[i]) for i in sorted(dead)]
            )
        if not retry:
            await batch[-1].ack(multiple=True)
            return
        for i, message in enumerate(batch):
            await (message.ack() if i in dead else message.nack(requeue=True))


@dataclass(frozen=True, slots=True)
class _Arrived:
    """A delivery in the inbox, with when it arrived (loop time) and how long after the
    one before it."""

    message: AbstractIncomingMessage
    at: float
    gap: float


def _open(message: AbstractIncomingMessage) -> bool:
    """Whether ``message`` can still be settled: its channel (the one it was delivered
    on) is open. One prefetched on a connection since lost cannot; the broker has
    requeued it. (aio-pika raises on ``message.channel`` once the channel is closed.)"""
    try:
        return not message.channel.is_closed
    except aio_pika.exceptions.ChannelInvalidStateError:
        return False


def _header_text(value: object) -> str:
    """A header as text. Any AMQP client can send bytes that are not UTF-8: they are
    kept as escapes, never raised on (that would end the consumer)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    return str(value)


def _delivery(message: AbstractIncomingMessage, prefix: str) -> Delivery:
    return Delivery(
        body=message.body,
        exchange=(message.exchange or "").removeprefix(prefix),
        routing_key=message.routing_key or "",
        headers={key: _header_text(value) for key, value in (message.headers or {}).items()},
        redelivered=bool(message.redelivered),
    )


class RabbitFetched:
    """What :meth:`RabbitBus.fetch` took (unacknowledged on the fetch's channel)."""

    def __init__(self, messages: Sequence[AbstractIncomingMessage], prefix: str) -> None:
        self._deliveries = [_delivery(m, prefix) for m in messages]
        self._by_id = dict(zip(map(id, self._deliveries), messages, strict=True))

    @property
    def deliveries(self) -> Sequence[Delivery]:
        return self._deliveries

    async def remove(self, deliveries: Iterable[Delivery]) -> None:
        try:
            for delivery in deliveries:
                message = self._by_id.pop(id(delivery), None)
                if message is not None:
                    await message.ack()
        except _BROKER_ERRORS as exc:
            raise BusError(f"cannot remove a message: {redact(repr(exc))}") from exc
