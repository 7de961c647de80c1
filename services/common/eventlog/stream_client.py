"""The AMQP side of a stream event log: one connection (to the first node of
``KSCHED_AMQP_URL`` that answers; the next one after a failure), stream declarations,
ordered publishes with confirms, and reads by offset.

Not robust on purpose: a lost connection fails the operation under way (an append
raises LogWriteError) and the next operation connects again, so the log always knows
what the broker confirmed. aio-pika and aiormq errors end here as :data:`BROKER_ERRORS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence

import aio_pika
import aiormq
from aio_pika.abc import (
    AbstractChannel,
    AbstractConnection,
    AbstractIncomingMessage,
    AbstractQueue,
)

from services.common.bus.rabbit_connection import BROKER_ERRORS
from services.common.bus.rabbit_write import Raw, supported, write_raw
from services.common.eventlog.stream_wire import OFFSET, Record, record
from services.common.redact import redact
from services.common.tls import NO_TLS_FILES, TLSFiles, client_context, is_tls_url

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
CONFIRM_TIMEOUT = 30.0
"""Seconds an append waits for the broker's confirms (a stream confirms once a
majority of its replicas wrote the messages)."""
IDLE_TIMEOUT = 30.0
"""Seconds a read waits for the next message it knows is there before it fails."""
PREFETCH = 512
"""Messages a read has in flight (``basic.qos``; a stream consumer needs one)."""

__all__ = ["BROKER_ERRORS", "StreamClient"]


class StreamClient:
    """One connection's worth of stream operations, for one log."""

    def __init__(self, urls: Sequence[str], tls: TLSFiles = NO_TLS_FILES) -> None:
        self._urls = list(urls)
        self._tls = tls
        self._next = 0
        self._connection: AbstractConnection | None = None
        self._channel: AbstractChannel | None = None
        self.consumed = 0
        """Messages read so far (all reads): tests check that a read from the middle
        of a long log does not read it from the start."""
        self.idle_timeout = IDLE_TIMEOUT
        self._opening = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self._connection is not None and not self._connection.is_closed

    async def open(self) -> AbstractChannel:
        """The publishing channel, connecting first if needed: to the nodes in turn,
        starting after the one that failed last."""
        async with self._opening:  # the writer's tail and its appends share it
            if self._channel is not None and not self._channel.is_closed and self.connected:
                return self._channel
            return await self._reconnect()

    async def _reconnect(self) -> AbstractChannel:
        await self.drop()
        context = None
        if is_tls_url(self._urls[0]):
            context = await asyncio.to_thread(client_context, self._tls)
        error: BaseException | None = None
        for _ in range(len(self._urls)):
            url = self._urls[self._next]
            try:
                connection = await aio_pika.connect(
                    url, ssl_context=context, timeout=CONNECT_TIMEOUT
                )
            except BROKER_ERRORS as exc:
                error = exc
                self._next = (self._next + 1) % len(self._urls)
                continue
            self._connection = connection
            self._channel = await connection.channel(publisher_confirms=True)
            return self._channel
        assert error is not None
        raise error

    async def drop(self) -> None:
        """Forget the connection (closing it if it is still up); the next operation
        connects again (to the next node after :meth:`failed`)."""
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None:
            with contextlib.suppress(*BROKER_ERRORS):
                async with asyncio.timeout(2.0):
                    await connection.close()

    def failed(self) -> None:
        """The connection failed under an operation: use the next node next time."""
        self._next = (self._next + 1) % len(self._urls)

    async def declare(self, name: str, arguments: Mapping[str, int | str]) -> None:
        channel = await self.open()
        await channel.declare_queue(
            name, durable=True, arguments={"x-queue-type": "stream", **arguments}
        )

    async def publish(self, name: str, messages: Sequence[tuple[bytes, dict[str, object]]]) -> None:
        """Publish ``messages`` (body, headers) to stream ``name``, in order, and wait for
        every confirm; raises a broker error (or TimeoutError) if one is missing."""
        channel = await self.open()
        underlay = await channel.get_underlay_channel()
        raws = [Raw("", name, body, headers) for body, headers in messages]
        async with asyncio.timeout(CONFIRM_TIMEOUT):
            if supported(underlay):
                futures = await write_raw(underlay, raws)
                results = await asyncio.gather(*futures)
            else:  # another aiormq: one publish at a time, in order
                results = [
                    await underlay.basic_publish(
                        m.body,
                        routing_key=name,
                        properties=aiormq.spec.Basic.Properties(
                            headers=m.headers,  # type: ignore[arg-type]
                            delivery_mode=2,
                        ),
                    )
                    for m in raws
                ]
        for result in results:
            if isinstance(result, aiormq.spec.Basic.Nack):
                raise aiormq.exceptions.DeliveryError(None, result)

    @contextlib.asynccontextmanager
    async def records(
        self, name: str, start: int | str, *, prefetch: int = PREFETCH, follow: bool = False
    ) -> AsyncIterator[AsyncIterator[Record]]:
        """The messages of stream ``name`` from offset ``start`` (or ``"first"``,
        ``"last"``, ``"next"``) on, as Records, on a channel of their own (closed on
        exit: a stream refuses the nack aio-pika's queue iterator sends for what was
        prefetched and not read). Iterating waits for each next message at most
        ``idle_timeout`` seconds: only iterate as far as messages are known to exist;
        ``follow``: wait for ever (a writer following the stream)."""
        await self.open()
        assert self._connection is not None
        channel = await self._connection.channel(publisher_confirms=False)
        try:
            await channel.set_qos(prefetch_count=prefetch)
            queue: AbstractQueue = await channel.declare_queue(name, passive=True)
            inbox: asyncio.Queue[AbstractIncomingMessage | None] = asyncio.Queue()
            channel.close_callbacks.add(lambda *_: inbox.put_nowait(None))
            await queue.consume(inbox.put, arguments={"x-stream-offset": start})
            idle = None if follow else self.idle_timeout
            yield self._records(name, inbox, start, idle, prefetch)
        finally:
            if not channel.is_closed:
                with contextlib.suppress(*BROKER_ERRORS):
                    async with asyncio.timeout(2.0):
                        await channel.close()

    async def _records(
        self,
        name: str,
        inbox: asyncio.Queue[AbstractIncomingMessage | None],
        start: int | str,
        idle: float | None,
        prefetch: int,
    ) -> AsyncIterator[Record]:
        floor = start if isinstance(start, int) else 0
        unacked, ack_every = 0, max(1, prefetch // 4)
        while True:
            async with asyncio.timeout(idle):
                message = await inbox.get()
            if message is None:
                raise aiormq.exceptions.ChannelInvalidStateError(f"stream {name}: channel closed")
            self.consumed += 1
            unacked += 1
            if unacked >= ack_every or inbox.empty():
                await message.ack(multiple=True)  # credit for the next ones
                unacked = 0
            headers = dict(message.headers or {})
            offset = headers.get(OFFSET)
            if not isinstance(offset, int):
                raise ValueError(f"stream {name}: a message without its offset")
            if offset < floor:
                continue  # a chunk is delivered whole: skip what precedes the start
            yield record(offset, headers, message.body)


def describe(error: BaseException) -> str:
    """A broker error in one line, without passwords."""
    if isinstance(error, TimeoutError):
        return "the broker did not answer in time"
    return redact(str(error) or repr(error)).replace("\n", " ")
