"""The RabbitBus's connection: aio-pika's robust connection with a bounded first
connect and close, backoff between reconnection attempts, and aio-pika's reconnection
lines rate-limited (see :class:`_Connection`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import aio_pika
import aiormq
from aio_pika.abc import AbstractChannel, AbstractRobustConnection, TimeoutType, UnderlayConnection
from yarl import URL

from services.common.redact import redact

log = logging.getLogger("services.common.bus.rabbit")

BROKER_ERRORS = (
    aiormq.exceptions.AMQPError,
    aiormq.exceptions.ChannelInvalidStateError,  # a RuntimeError: the channel is gone
    ConnectionError,
    OSError,
    asyncio.TimeoutError,
)
CLOSE_TIMEOUT = 2.0
"""Seconds each step of closing (a consumer's handler and channel, the connection) may
take before it is abandoned; the broker requeues whatever was not acknowledged. A
channel's close that takes longer goes on in the background (:func:`close_channel`)."""
RECONNECT_FIRST = 0.5
"""Seconds before the second attempt to reconnect (the first is immediate)."""
RECONNECT_MAX = 5.0
"""The longest wait between two attempts to reconnect."""
RECONNECT_LOG_EVERY = 5.0
"""Seconds between two lines about failed reconnection attempts."""


class _Connection(aio_pika.RobustConnection):
    """aio-pika's robust connection, except that a first connect that fails, times out
    or is cancelled closes the connection. aio-pika leaves its reconnection task running
    then, and that task swallows the cancellation ``asyncio.run`` sends at exit ("Connection
    attempt cancelled. Reconnecting after 5 seconds"), so the process never ends: a
    service stopped while connecting sat idle in its event loop until killed.

    It also backs off between reconnection attempts: aio-pika waits
    ``reconnect_interval`` after each, read here as the time the connection has been
    down, between RECONNECT_FIRST and RECONNECT_MAX, so the waits double. The loss
    and the recovery are logged once each."""

    _lost_at: float | None = None
    _was_connected = False
    """A first connect that fails is the caller's error to report, not a loss."""
    _brokers: tuple[URL, ...] = ()
    """The nodes of the broker's cluster (``KSCHED_AMQP_URL`` lists several): each
    reconnection attempt after the node connected to died, or after an attempt that
    failed, goes to the next of them in turn (:meth:`use_brokers`)."""
    _broker = 0
    _attempting = False
    _transport: UnderlayConnection | None = None

    def use_brokers(self, urls: Sequence[str], current: int) -> None:
        """Reconnect to the nodes ``urls`` in turn, from the one after ``current``
        (the one connected to now)."""
        self._brokers = tuple(URL(url) for url in urls)
        self._broker = current

    def _next_broker(self) -> None:
        if len(self._brokers) > 1:
            self._broker = (self._broker + 1) % len(self._brokers)
            self.url = self._brokers[self._broker]
            log.info("reconnecting to broker %d of %d", self._broker + 1, len(self._brokers))

    @property
    def transport(self) -> UnderlayConnection | None:
        return self._transport

    @transport.setter
    def transport(self, value: UnderlayConnection | None) -> None:
        # aio-pika clears the transport before each attempt to connect, and sets it on
        # success: cleared while still clear, the last attempt failed.
        if value is None and self._transport is None and self._attempting:
            self._next_broker()
        self._attempting = value is None and bool(self._brokers)
        self._transport = value

    @property
    def reconnect_interval(self) -> float:
        if self._lost_at is None:
            return RECONNECT_FIRST
        return reconnect_delay(time.monotonic() - self._lost_at)

    @reconnect_interval.setter
    def reconnect_interval(self, value: float) -> None:  # aio-pika's __init__ sets it
        pass

    async def connect(self, timeout: TimeoutType = None) -> None:  # noqa: ASYNC109 (aio-pika's)
        try:
            await super().connect(timeout)
        except BaseException:
            await _close(self)
            raise

    async def _on_connection_close(self, closing: asyncio.Future[Any]) -> None:
        lost = self._was_connected and not (self._close_called or self.is_closed)
        if lost and self._lost_at is None:
            self._lost_at = time.monotonic()
            self._next_broker()  # the node itself may be gone
            reason = closing.exception() if closing.done() and not closing.cancelled() else None
            log.warning(
                "lost the broker connection (%s); reconnecting with backoff "
                "(%g s doubling up to %g s)",
                redact(repr(reason)) if reason else "closed",
                RECONNECT_FIRST,
                RECONNECT_MAX,
            )
        await super()._on_connection_close(closing)

    async def _on_connected(self) -> None:
        await super()._on_connected()
        self._was_connected = True
        if self._lost_at is not None:
            log.warning(
                "reconnected to the broker after %.1f s: channels, exchanges, queues, "
                "bindings and consumers restored",
                time.monotonic() - self._lost_at,
            )
            self._lost_at = None


async def connect_brokers(urls: Sequence[str], **options: Any) -> AbstractRobustConnection:
    """A robust connection to the first of ``urls`` (the nodes of one cluster) that
    answers, which reconnects to the others in turn when its node dies. Raises the last
    node's error when none answers. ``options``: aio-pika's ``connect_robust``'s."""
    error: BaseException | None = None
    for index, url in enumerate(urls):
        try:
            connection = await aio_pika.connect_robust(url, connection_class=_Connection, **options)
        except BROKER_ERRORS as exc:
            error = exc
            if len(urls) > 1:
                log.warning("broker %d of %d: %s", index + 1, len(urls), redact(repr(exc)))
            continue
        assert isinstance(connection, _Connection)
        connection.use_brokers(urls, index)
        return connection
    assert error is not None, "no broker URL"
    raise error


def connect_failure(url: str, error: BaseException) -> str:
    """Why connecting to the broker at ``url`` failed, in one line. aiormq reports a
    virtual host the broker will not open (it does not exist, or the user may not use
    it) as an unexpected frame, ``InvalidFrameError(... <Connection.Close object at
    0x...>)``: that is said in words, naming the virtual host and the user."""
    if isinstance(error, aiormq.exceptions.InvalidFrameError) and all(
        name in str(error) for name in ("Connection.OpenOk", "Connection.Close")
    ):
        parsed = urlsplit(url.split(",")[0].strip())  # a cluster's nodes share it
        vhost = unquote(parsed.path[1:]) if parsed.path not in ("", "/") else "/"
        user = unquote(parsed.username or "guest")
        return f"virtual host {vhost!r} does not exist, or user {user!r} may not use it"
    return f"cannot connect to the broker at {redact(url)}: " + redact(repr(error))


def reconnect_delay(down: float) -> float:
    """Seconds to wait before the next attempt to reconnect, the connection having been
    down for ``down`` seconds: that long, between RECONNECT_FIRST and RECONNECT_MAX. As
    each wait adds itself to ``down``, the waits double: 0.5, 0.5, 1, 2, 4, 5, 5…"""
    return min(RECONNECT_MAX, max(RECONNECT_FIRST, down))


class _RateLimit(logging.Filter):
    """Lets a logger's records through at most once every RECONNECT_LOG_EVERY seconds:
    installed on aio-pika's reconnection logger (a line or two per attempt, and attempts
    come fast while the backoff is short) and on its callback logger (a line per channel
    whose close callback finds the transport gone, on every connection loss). The bus's
    own lines about the loss and the recovery are not limited."""

    NOISY = ("aio_pika.robust_connection", "aio_pika.tools")
    _installed = False

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._last: float | None = None

    @classmethod
    def install(cls) -> None:
        if not cls._installed:
            cls._installed = True
            for name in cls.NOISY:
                logging.getLogger(name).addFilter(cls())

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO:
            return True
        now = self._clock()
        if self._last is not None and now - self._last < RECONNECT_LOG_EVERY:
            return False
        self._last = now
        return True


async def _close(connection: AbstractRobustConnection) -> None:
    """Close ``connection`` within CLOSE_TIMEOUT. A robust connection is marked closed
    first thing, so its reconnection task ends even if the broker never answers."""
    try:
        async with asyncio.timeout(CLOSE_TIMEOUT):
            await connection.close()
    except BROKER_ERRORS:
        log.warning("unclean close of the broker connection", exc_info=True)


class ChannelCloser:
    """Closes channels without ever cancelling a close that is under way.

    aiormq answers an RPC cancelled while it awaits its reply by sending ``Channel.Close``
    (reply 504) on that channel. When the RPC was the ``Channel.Close`` itself, the
    broker has already closed the channel on the first one, and a frame other than
    ``channel.open`` on a channel it does not hold open is a connection error: it closes
    the whole connection with ``504 CHANNEL_ERROR - expected 'channel.open'``, and with
    it every other channel and consumer of the bus. A loaded broker or client that took
    longer than the caller's deadline to confirm a close, and a deadline around the
    close, was all it took.

    So :meth:`close` waits for the broker's confirmation at most ``timeout`` seconds, and
    a close that is still under way then is left to finish (or to end with its
    connection); the caller goes on either way. The caller's own cancellation does not
    reach the close either. :meth:`settle` waits for the closes still under way, before
    the connection is closed."""

    def __init__(self, timeout: float = CLOSE_TIMEOUT) -> None:
        self.timeout = timeout
        self._pending: set[asyncio.Task[None]] = set()

    async def close(self, channel: AbstractChannel, what: str) -> bool:
        """Close ``channel`` (``what`` names it in the log); whether the broker confirmed
        within ``timeout`` seconds. A broker error of the close is raised."""
        closing = asyncio.ensure_future(channel.close())
        self._pending.add(closing)
        closing.add_done_callback(self._finished)
        done, _ = await asyncio.wait([closing], timeout=self.timeout)
        if not done:
            log.warning(
                "%s: the broker has not confirmed the channel's close after %g s; it goes "
                "on in the background",
                what,
                self.timeout,
            )
            return False
        closing.result()
        return True

    async def settle(self) -> None:
        """Wait at most ``timeout`` seconds for the closes still under way."""
        if self._pending:
            await asyncio.wait(list(self._pending), timeout=self.timeout)

    def _finished(self, closing: asyncio.Task[None]) -> None:
        self._pending.discard(closing)
        if not closing.cancelled() and (error := closing.exception()) is not None:
            log.debug("a channel's close ended with %s", redact(repr(error)))
