"""RabbitMQ :class:`~services.common.bus.base.Bus` on aio-pika.

One robust connection per bus. Publishing uses one channel with publisher confirms: a
publish writes its messages to the socket PUBLISH_CHUNK at a time, in order, and awaits
their confirmations together (one write and one task per message made publishing most of
a binder's work, and of the client's in ``ksched bench``). Every consumer gets its own
channel whose ``basic.qos`` is its prefetch. A consumer's callback only appends to a
local inbox; one task per consumer drains it into batches, calls the handler and settles
the batch (see :mod:`services.common.bus.base`; the consumer is in
:mod:`services.common.bus.rabbit_consume`).

A lost connection (broker restart, ``close_all_connections``, network) is logged once,
then re-established with backoff (the first attempt at once, then after RECONNECT_FIRST
seconds, doubling up to RECONNECT_MAX; aio-pika's line per attempt is let through at
most once every RECONNECT_LOG_EVERY seconds); on success every channel is reopened
with its prefetch, every exchange, queue and binding re-declared and every consumer
restarted, and that is logged. While it is down, publishes raise :class:`BusError`
and handlers that publish therefore raise: their batches are redelivered later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence

import aio_pika
import aiormq
from aio_pika.abc import (
    AbstractChannel,
    AbstractExchange,
    AbstractIncomingMessage,
    AbstractQueue,
    AbstractRobustConnection,
)

from contracts.topology import (
    DEAD,
    EXCHANGES,
    ORIGIN_EXCHANGE_HEADER,
    ORIGIN_QUEUE_HEADER,
    REASON_HEADER,
    ExchangeSpec,
    QueueSpec,
    queue_arguments,
)
from services.common import redact as redaction
from services.common.brokers import broker_urls
from services.common.bus import rabbit_write, tracing
from services.common.bus.base import (
    UNAVAILABLE_PAUSE,
    BatchHandler,
    Bus,
    BusError,
    BusRefused,
    Consumer,
    Delivery,
    Fetched,
    Message,
    effective_prefetch,
)
from services.common.bus.rabbit_connection import (
    BROKER_ERRORS as _BROKER_ERRORS,
)
from services.common.bus.rabbit_connection import (
    RECONNECT_FIRST,
    ChannelCloser,
    _close,
    _RateLimit,
    connect_brokers,
    connect_failure,
)
from services.common.bus.rabbit_consume import RabbitConsumer, RabbitFetched
from services.common.redact import redact
from services.common.tls import NO_TLS_FILES, TLSFiles, client_context, is_tls_url

log = logging.getLogger(__name__)

_DURABLE = {spec.name: spec.durable for spec in EXCHANGES}
_TRANSIENT = aio_pika.DeliveryMode.NOT_PERSISTENT
_JSON = "application/json"
_Declare = Callable[[AbstractChannel, bool], Awaitable[object]]
"""Declares one exchange or queue on a channel, passively or not."""
CONNECT_TIMEOUT = 10.0
"""Seconds for the connection handshake (a broker that accepts and never answers)."""
PUBLISH_TIMEOUT = 30.0
"""Seconds a publish may wait for the broker's confirmation before it fails with
BusError. aio-pika waits for a lost connection to come back before it sends, and a
confirmation pending on a channel that died under it is never answered: without this
bound a handler publishing across a dropped connection waited forever, holding its
batch (and the informer its lock)."""


MAX_ROUTING_KEY = 255
"""Bytes: AMQP's short string (a longer key would close the connection)."""


class RabbitBus(Bus):
    """A :class:`~services.common.bus.base.Bus` on RabbitMQ.

    Connects lazily on first use (``open_bus`` is synchronous) and reconnects by
    itself (aio-pika robust connection: exchanges, queues, bindings and consumers are
    restored). Deliveries prefetched on a connection that was lost are not handed to
    the handler; the broker redelivers them.

    ``namespace``, when non-empty, prefixes every exchange and queue name with
    ``"{namespace}."`` on the broker, so several buses (test runs, tenants) share one
    broker without seeing each other. Names in :class:`Message`, :class:`Delivery`
    and :class:`QueueSpec` are always the un-prefixed topology names.

    ``publish`` uses ``mandatory=False``: a message no queue is bound for is dropped, as
    on ``MemoryBus``; refusals (nack) and broker errors raise :class:`BusError`.

    ``url`` may list the nodes of a cluster, comma-separated (services.common.brokers):
    it connects to the first that answers and reconnects to the next when its node dies.
    ``quorum`` declares every durable queue a quorum queue (contracts.topology).

    ``amqps://`` connects over TLS with ``tls`` (CA, client certificate and key; the
    server's certificate and host name are verified). Error messages never carry the
    URL's password (:func:`services.common.redact.redact`).

    Least privilege: an exchange or queue this user may not configure (declare) is
    expected to exist already (``ops/rabbitmq/definitions.json`` declares the durable
    topology): it is declared passively and its bindings are left to the definitions.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "",
        tls: TLSFiles = NO_TLS_FILES,
        unavailable_pause: float = UNAVAILABLE_PAUSE,
        quorum: bool = False,
    ) -> None:
        redaction.install()
        self.quorum = quorum
        """Declare durable queues quorum (``KSCHED_QUEUE_TYPE``; see contracts.topology)."""
        _RateLimit.install()
        self._url = url
        self.unavailable_pause = unavailable_pause
        self.publish_timeout = PUBLISH_TIMEOUT
        self._tls = tls
        self._probe: AbstractChannel | None = None
        self.namespace = namespace
        self._connection: AbstractRobustConnection | None = None
        self._channel: AbstractChannel | None = None
        self._exchanges: dict[str, AbstractExchange] = {}
        self._queue_names: set[str] = set()
        self._consumers: list[RabbitConsumer] = []
        self._lock = asyncio.Lock()
        self._closed = False
        self.closer = ChannelCloser()
        """Closes this bus's channels (a consumer's, a fetch's, a purge's): never cancels
        a close under way, which would cost the whole connection."""

    def broker_name(self, name: str) -> str:
        """The name of exchange or queue ``name`` on the broker (namespace applied)."""
        return f"{self.namespace}.{name}" if self.namespace else name

    async def declare(self, queues: Iterable[QueueSpec]) -> None:
        channel = await self._open()
        assert self._connection is not None
        for spec in queues:
            await self._declare_queue(self._connection, channel, spec)

    async def publish(self, messages: Sequence[Message]) -> None:
        await self._open()
        for message in messages:
            if message.exchange not in self._exchanges:
                raise BusError(f"no exchange {message.exchange!r}")
            if len(message.routing_key.encode()) > MAX_ROUTING_KEY:
                # Before anything is sent (as MemoryBus): a retry publishes no duplicates.
                raise BusRefused(f"routing key too long (max {MAX_ROUTING_KEY} bytes)")
        with tracing.sending(messages, self.broker_name) as traced:
            failures = await self._publish_all(traced)
            if failures:
                refused = next((f for f in failures if not _lost(f)), None)
                error = BusRefused if refused is not None else BusError
                first = refused or failures[0]
                raise error(
                    f"{len(failures)} of {len(messages)} messages not confirmed: "
                    + redact(repr(first))
                ) from first

    async def consume_raw(
        self,
        queue: QueueSpec,
        handler: BatchHandler,
        *,
        max_batch: int = 256,
        prefetch: int | None = None,
        linger: float = 0.0,
    ) -> Consumer:
        prefetch = effective_prefetch(max_batch, prefetch)
        await self._open()
        assert self._connection is not None
        try:
            channel = await self._connection.channel(publisher_confirms=False)
            await channel.set_qos(prefetch_count=prefetch)
            declared = await self._declare_queue(self._connection, channel, queue)
            consumer = RabbitConsumer(
                self,
                queue,
                channel,
                declared,
                handler,
                max_batch=max_batch,
                prefetch=prefetch,
                linger=linger,
            )
            await consumer.start()
        except _BROKER_ERRORS as exc:
            raise BusError(f"cannot consume {queue.name!r}: {redact(repr(exc))}") from exc
        self._consumers.append(consumer)
        return consumer

    @contextlib.asynccontextmanager
    async def fetch(self, queue: QueueSpec, *, limit: int | None = None) -> AsyncIterator[Fetched]:
        """``basic.get`` on a channel of its own; closing it returns what was not
        removed (RabbitMQ puts requeued messages back in their place)."""
        await self._open()
        assert self._connection is not None
        try:
            channel = await self._connection.channel(publisher_confirms=False)
            declared = await self._declare_queue(self._connection, channel, queue)
            taken: list[AbstractIncomingMessage] = []
            while limit is None or len(taken) < limit:
                message = await declared.get(no_ack=False, fail=False)
                if message is None:
                    break
                taken.append(message)
        except _BROKER_ERRORS as exc:
            raise BusError(f"cannot read {queue.name!r}: {redact(repr(exc))}") from exc
        try:
            yield RabbitFetched(taken, self.broker_name(""))
        finally:
            try:
                await self.closer.close(channel, f"reading {queue.name}")
            except _BROKER_ERRORS:
                log.warning("unclean close after reading %s", queue.name, exc_info=True)

    async def purge(self, queue: QueueSpec) -> int:
        await self._open()
        assert self._connection is not None
        try:
            channel = await self._connection.channel(publisher_confirms=False)
            declared = await self._declare_queue(self._connection, channel, queue)
            result = await declared.purge()
            await self.closer.close(channel, f"purging {queue.name}")
        except _BROKER_ERRORS as exc:
            raise BusError(f"cannot purge {queue.name!r}: {redact(repr(exc))}") from exc
        return int(result.message_count or 0)

    async def close(self) -> None:
        """Cancel every consumer, then close the connection, each within CLOSE_TIMEOUT
        (channel closes still under way get that long again); the connection is closed
        even if a cancel failed."""
        self._closed = True
        try:
            for consumer in list(self._consumers):
                await consumer.cancel()
            await self.closer.settle()
        finally:
            connection, self._connection, self._channel = self._connection, None, None
            if connection is not None:
                await _close(connection)

    def connected(self) -> bool:
        """Whether the connection to the broker is up now (False while it reconnects)."""
        connection = self._connection
        if connection is None or connection.is_closed:
            return False
        transport = getattr(connection, "transport", None)
        return transport is not None and not transport.connection.is_closed

    async def wait_connected(self) -> None:
        """Wait until the connection is up (again, after a loss): a failover's test."""
        connection = self._connection
        if connection is not None:
            await connection.connected.wait()

    async def delete_namespace(self, queues: Iterable[str] = ()) -> None:
        """Delete this namespace's exchanges, every queue this bus declared and ``queues``
        (topology names) from the broker. For test teardown; refuses the empty
        namespace so that it can never delete a production topology."""
        if not self.namespace:
            raise BusError("refusing to delete the un-namespaced topology")
        for consumer in list(self._consumers):  # else its robust channel declares it again
            await consumer.cancel()
        channel = await self._open()
        for name in sorted({*self._queue_names, *queues}):
            await channel.queue_delete(self.broker_name(name))
        for spec in EXCHANGES:
            await channel.exchange_delete(self.broker_name(spec.name))

    async def _open(self) -> AbstractChannel:
        if self._closed:
            raise BusError("bus is closed")
        async with self._lock:
            if self._channel is None:
                try:
                    if self._connection is None:
                        self._connection = await self._connect()
                    connection = self._connection
                    channel = await connection.channel(publisher_confirms=True)
                    for spec in EXCHANGES:
                        self._exchanges[spec.name] = await self._declare_exchange(
                            connection, channel, spec
                        )
                except _BROKER_ERRORS as exc:
                    raise BusError(connect_failure(self._url, exc)) from exc
                self._channel = channel
            return self._channel

    async def _connect(self) -> AbstractRobustConnection:
        context = (
            await asyncio.to_thread(client_context, self._tls) if is_tls_url(self._url) else None
        )
        connection = await connect_brokers(
            broker_urls(self._url),
            ssl_context=context,
            timeout=CONNECT_TIMEOUT,
            reconnect_interval=RECONNECT_FIRST,
        )
        if self._closed:  # close() ran while this was connecting
            await _close(connection)
            raise BusError("bus is closed")
        return connection

    async def _may_configure(self, connection: AbstractRobustConnection, declare: _Declare) -> bool:
        """Whether this user may declare the object ``declare`` declares: tried on a
        throwaway channel, since a refusal (403) closes the channel it happens on."""
        if self._probe is None or self._probe.is_closed:
            self._probe = await connection.channel(publisher_confirms=False)
        try:
            await declare(self._probe, False)
        except aiormq.exceptions.ChannelAccessRefused:
            self._probe = None
            return False
        return True

    async def _declare_exchange(
        self, connection: AbstractRobustConnection, channel: AbstractChannel, spec: ExchangeSpec
    ) -> AbstractExchange:
        async def declare(on: AbstractChannel, passive: bool) -> AbstractExchange:
            return await on.declare_exchange(
                self.broker_name(spec.name),
                aio_pika.ExchangeType(spec.type),
                durable=spec.durable,
                passive=passive,
            )

        return await declare(channel, not await self._may_configure(connection, declare))

    async def _declare_queue(
        self, connection: AbstractRobustConnection, channel: AbstractChannel, spec: QueueSpec
    ) -> AbstractQueue:
        arguments = queue_arguments(
            spec, dead_exchange=self.broker_name(DEAD.name), quorum=self.quorum
        )

        async def declare(on: AbstractChannel, passive: bool) -> AbstractQueue:
            return await on.declare_queue(
                self.broker_name(spec.name),
                durable=spec.durable,
                exclusive=spec.exclusive,
                auto_delete=spec.auto_delete,
                passive=passive,
                arguments=dict(arguments),
            )

        try:
            if await self._may_configure(connection, declare):
                queue = await declare(channel, False)
                for binding in spec.bindings:
                    await queue.bind(self.broker_name(binding.exchange), binding.routing_key)
                await self._unbind_retired(connection, spec)
            else:  # the operator's (definitions file), bindings included
                queue = await declare(channel, True)
        except _BROKER_ERRORS as exc:
            hint = ""
            if "inequivalent arg 'x-queue-type'" in str(exc):
                wanted = arguments.get("x-queue-type", "classic")
                hint = (
                    f" (it exists with another type than {wanted}, and a queue's type cannot "
                    "change in place: drain and delete it, or set KSCHED_QUEUE_TYPE to its type)"
                )
            raise BusError(f"cannot declare {spec.name!r}: {redact(repr(exc))}{hint}") from exc
        self._queue_names.add(spec.name)
        return queue

    async def _unbind_retired(self, connection: AbstractRobustConnection, spec: QueueSpec) -> None:
        """Remove the bindings an earlier ksched made for ``spec`` (a missing one unbinds
        without error). On the probe channel: a user may configure its queue and still not
        read the old exchange, and a refusal closes the channel it happens on."""
        for binding in spec.retired:
            if self._probe is None or self._probe.is_closed:
                self._probe = await connection.channel(publisher_confirms=False)
            underlay = await self._probe.get_underlay_channel()
            try:
                await underlay.queue_unbind(
                    queue=self.broker_name(spec.name),
                    exchange=self.broker_name(binding.exchange),
                    routing_key=binding.routing_key,
                )
            except aiormq.exceptions.ChannelAccessRefused:
                self._probe = None
                log.info(
                    "%s stays bound to %s with %r (not allowed to unbind it): remove that "
                    "binding if an earlier ksched made it",
                    spec.name,
                    binding.exchange,
                    binding.routing_key,
                )

    async def _publish_all(self, messages: Sequence[Message]) -> list[BaseException]:
        """Publish ``messages`` in order; returns the failure of each one that failed.

        Written in batches of PUBLISH_CHUNK, each batch one write to the socket, and
        every confirmation awaited together (within ``publish_timeout``): one message
        per write and one task per message cost the binder a third of its time."""
        assert self._channel is not None
        try:
            underlay = await self._channel.get_underlay_channel()
        except _BROKER_ERRORS as exc:
            return [exc] * len(messages)
        if not rabbit_write.supported(underlay):
            results = await asyncio.gather(
                *(self._publish_one(message) for message in messages), return_exceptions=True
            )
            return [result for result in results if isinstance(result, BaseException)]
        failures: list[BaseException] = []
        pending: list[asyncio.Future[object]] = []
        error: BaseException | None = None
        try:
            async with asyncio.timeout(self.publish_timeout):
                for start in range(0, len(messages), rabbit_write.PUBLISH_CHUNK):
                    chunk = messages[start : start + rabbit_write.PUBLISH_CHUNK]
                    pending += await rabbit_write.write_batch(underlay, self.broker_name, chunk)
                if pending:
                    await asyncio.wait(pending)
        except _BROKER_ERRORS as exc:  # TimeoutError among them
            error = exc
        if error is not None:  # what was not written failed with it
            failures += [error] * (len(messages) - len(pending) - len(failures))
        for future in pending:
            if not future.done():
                future.cancel()
                failures.append(error or TimeoutError("no confirmation"))
            elif future.cancelled():
                failures.append(asyncio.CancelledError("the confirmation was cancelled"))
            elif (failure := future.exception()) is not None:
                failures.append(failure)
        return failures

    async def _publish_one(self, m: Message) -> None:
        mode = aio_pika.DeliveryMode.PERSISTENT if _DURABLE[m.exchange] else _TRANSIENT
        async with asyncio.timeout(self.publish_timeout):
            await self._exchanges[m.exchange].publish(
                aio_pika.Message(
                    m.body, headers=dict(m.headers), content_type=_JSON, delivery_mode=mode
                ),
                m.routing_key,
                mandatory=False,
            )

    async def _dead_letter(self, queue: QueueSpec, items: Sequence[tuple[Delivery, str]]) -> None:
        await self.publish(
            [
                Message(
                    DEAD.name,
                    d.routing_key,
                    d.body,
                    {
                        **d.headers,
                        REASON_HEADER: reason,
                        ORIGIN_EXCHANGE_HEADER: d.exchange,
                        ORIGIN_QUEUE_HEADER: queue.name,
                    },
                )
                for d, reason in items
            ]
        )


def _lost(failure: BaseException) -> bool:
    """Whether a publish failed because the connection or channel went away, the
    confirm did not come in time or the broker nacked it, not because of the message:
    a frame or syntax error closes the connection too, but the message caused it."""
    if isinstance(
        failure, aiormq.exceptions.ConnectionFrameError | aiormq.exceptions.ConnectionSyntaxError
    ):
        return False
    if isinstance(failure, aiormq.exceptions.DeliveryError):
        # A nack: the broker could not take the message now (a quorum queue or stream
        # electing a leader or without a majority while a node is down), not a verdict
        # on the message; a return (unroutable) is.
        return isinstance(failure.frame, aiormq.spec.Basic.Nack)
    return isinstance(
        failure,
        aiormq.exceptions.AMQPConnectionError
        | aiormq.exceptions.ChannelInvalidStateError
        | ConnectionError
        | OSError
        | TimeoutError,
    )
