"""The redis-py client behind RedisStore: how it connects (a Redis URL, or Sentinel),
how a call rides out a failover, how a guarded write waits for a replica, and the
span every store method makes (see :mod:`services.common.store.redis`).

Under Sentinel (:mod:`services.common.store.sentinel`) the client is
``Sentinel.master_for``: each new connection asks the Sentinels for the master, and a
connection that meets a demoted master (READONLY) is dropped. A store method that fails
with a connection error (the master died, no master is agreed on yet, READONLY, LOADING)
is called again, backing off from 50 ms to 1 s, until
``FailoverOptions.failover_timeout`` has passed: every store method is idempotent for
the same arguments (:mod:`services.common.store.base`), and every Lua script is loaded
again on the new master's NOSCRIPT (by redis-py's Script; by :class:`ReplicaAck` for the
writes it pipelines with WAIT). A single Redis URL keeps failing at once (its clients
have their own retries). The old master takes writes until the Sentinels demote it (and
then drops them): a guarded write no replica acknowledged asks the Sentinels whether the
master moved (:func:`master_moved`), and so does ``identity``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import (
    ConnectionError,
    NoScriptError,
    ReadOnlyError,
    ResponseError,
    TimeoutError,
)

from services.common import redact, telemetry
from services.common.store.sentinel import FailoverOptions, is_sentinel_url, parse_sentinel_url
from services.common.tls import TLSFiles, is_tls_url, redis_ssl_options

log = logging.getLogger(__name__)

FIRST_BACKOFF = 0.05
MAX_BACKOFF = 1.0
"""Seconds between the attempts of a store call while the master fails over."""
SENTINEL_TIMEOUT = 2.0
"""Seconds to connect to (and hear from) one Sentinel before asking the next."""
DEGRADED_WAIT_MS = 1
DEGRADED_RETRY = 1.0
"""While no replica acknowledges: the wait (ms), and how often (s) the full one is tried."""
FAILOVER_ERRORS = (ConnectionError, TimeoutError, ReadOnlyError)

_tracer = telemetry.tracer("store")
_Operation = TypeVar("_Operation", bound=Callable[..., Awaitable[Any]])


class Client:
    """A redis-py client, its connection's span attributes, and how to close both it
    and (under Sentinel) the Sentinels' connections."""

    def __init__(
        self, redis: aioredis.Redis, attributes: dict[str, str | int], sentinel: Any = None
    ) -> None:
        self.redis = redis
        self.attributes = attributes
        self._sentinel = sentinel

    async def aclose(self) -> None:
        await self.redis.aclose()
        if self._sentinel is not None:
            await self._sentinel.aclose()


def connect(url: str, tls: TLSFiles, options: FailoverOptions) -> Client:
    """The client for ``url``. Raises ValueError for a Sentinel URL that does not parse
    (the wrong part named)."""
    if not is_sentinel_url(url):
        plain = aioredis.from_url(
            url, decode_responses=False, **(redis_ssl_options(tls) if is_tls_url(url) else {})
        )
        return Client(plain, _connection_attributes(plain.connection_pool.connection_kwargs))
    try:
        parsed = parse_sentinel_url(url)
    except ValueError as error:
        raise ValueError(f"store URL {redact.redact(url)!r}: {error}") from None
    ssl_options: dict[str, Any] = {"ssl": True, **redis_ssl_options(tls)} if parsed.tls else {}
    sentinel_kwargs: dict[str, Any] = {
        "socket_timeout": SENTINEL_TIMEOUT,
        "socket_connect_timeout": SENTINEL_TIMEOUT,
        "retry": Retry(NoBackoff(), 0),  # a Sentinel that fails: the next is asked
        **ssl_options,
    }
    if options.sentinel_password is not None:
        sentinel_kwargs["password"] = options.sentinel_password
    sentinel = Sentinel(list(parsed.sentinels), sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    client: aioredis.Redis = sentinel.master_for(
        parsed.service,
        decode_responses=False,
        db=parsed.db,
        username=parsed.username,
        password=parsed.password,
        socket_connect_timeout=SENTINEL_TIMEOUT,
        # One immediate retry on a fresh connection (an idle one to a dead master);
        # the failover itself is waited out by retrying (the whole store call).
        retry=Retry(NoBackoff(), 1),
        **ssl_options,
    )
    host, port = parsed.sentinels[0]
    attributes: dict[str, str | int] = {
        "db.system.name": "redis",
        "db.system": "redis",
        "db.namespace": str(parsed.db),
        "server.address": host,
        "server.port": port,
    }
    return Client(client, attributes, sentinel)


class _Outage:
    """One WARNING when store calls start failing over, one when one succeeds again
    (not one per call: a failover fails every call in flight)."""

    since: float | None = None


async def retrying(within: float, call: Callable[[], Awaitable[Any]], what: str) -> Any:
    """``call()``, called again after a failover error until ``within`` seconds have
    passed (then the last error is raised); ``within`` 0: once."""
    deadline = time.monotonic() + within
    delay, failed = FIRST_BACKOFF, False
    while True:
        try:
            result = await call()
        except FAILOVER_ERRORS as error:
            if time.monotonic() + delay > deadline:
                if isinstance(error, MasterNotFoundError):
                    raise MasterNotFoundError(_short(error)) from None
                raise
            failed = True
            if _Outage.since is None:
                _Outage.since = time.monotonic()
                log.warning(
                    "Redis %s failed (%s): retrying against the master the Sentinels "
                    "name, for up to %.0f s",
                    what,
                    _short(error),
                    within,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)
            continue
        if failed and _Outage.since is not None:
            log.warning(
                "Redis answers again (%s) after %.1f s", what, time.monotonic() - _Outage.since
            )
            _Outage.since = None
        return result


def _short(error: Exception) -> str:
    """``error`` in words; redis-py's MasterNotFoundError repeats every Sentinel client."""
    if isinstance(error, MasterNotFoundError):
        return str(error).partition(" : ")[0] + " (no Sentinel named a live master)"
    return str(error)


class ReplicaAck:
    """A guarded write followed by ``WAIT 1 <ms>`` on the same connection, in one round
    trip (see FailoverOptions.replica_wait). One WARNING when writes stop being
    acknowledged by a replica, one INFO when they are again. Meanwhile (no replica
    connected, or one lagging) the writes wait :data:`DEGRADED_WAIT_MS` only, and the
    full wait again once per :data:`DEGRADED_RETRY` seconds: a master left alone keeps
    its throughput."""

    def __init__(self, client: aioredis.Redis, seconds: float) -> None:
        self._client = client
        self._ms = max(1, round(seconds * 1000)) if seconds > 0 else 0
        self.missed = False
        """The last wait ended without a replica's ack."""
        self._full_again = 0.0
        """When (monotonic) a write waits the full time again while missed."""

    @property
    def enabled(self) -> bool:
        return self._ms > 0

    async def run(self, script: AsyncScript, args: Sequence[Any]) -> Any:
        """``script`` with ``args`` (no keys), then WAIT; the script's reply. WAIT counts
        the writes of its own connection, hence the pipeline (not a transaction: the
        script is atomic by itself). A script the server does not know (a new master)
        is loaded and the pair sent again. A write no replica acknowledged asks the
        Sentinels whether the master moved (ConnectionError then: retried on it)."""
        now = time.monotonic()
        full = not self.missed or now >= self._full_again
        ms = self._ms if full else min(self._ms, DEGRADED_WAIT_MS)
        for _ in range(2):
            pipe = self._client.pipeline(transaction=False)
            pipe.evalsha(script.sha, 0, *args)
            pipe.execute_command("WAIT", 1, ms)
            reply, acked = await pipe.execute(raise_on_error=False)
            if isinstance(reply, NoScriptError):
                await self._client.script_load(script.script)
                continue
            missed = not isinstance(acked, int) or acked < 1
            if missed:
                await master_moved(self._client)
                if full:
                    self._full_again = now + DEGRADED_RETRY
            self._report(missed)
            if isinstance(reply, Exception):
                raise reply
            return reply
        raise NoScriptError(f"NOSCRIPT the server dropped script {script.sha} again")

    def _report(self, missed: bool) -> None:
        if missed and not self.missed:
            log.warning(
                "no Redis replica acknowledged a guarded write within %d ms: it is on "
                "the master only until one catches up (a failover now could lose it)",
                self._ms,
            )
        elif self.missed and not missed:
            log.info("a Redis replica acknowledges the guarded writes again")
        self.missed = missed


async def master_moved(client: aioredis.Redis) -> None:
    """Under Sentinel: raise ConnectionError when the Sentinels name another master than
    the one this client's connections went to (a failover: the old master takes writes
    until the Sentinels demote it, and then drops them), after dropping the idle
    connections to it. Nothing for a single Redis."""
    pool = client.connection_pool
    if isinstance(pool, SentinelConnectionPool):
        before = pool.master_address
        now = await pool.get_master_address()  # type: ignore[no-untyped-call]
        # (get_master_address disconnects the idle connections when the master moved)
        if before is not None and now != before:
            raise ConnectionError(f"the master moved from {before} to {now}")


def traced(command: str, script: str | None = None) -> Callable[[_Operation], _Operation]:
    """The store method as one CLIENT span (see RedisStore's docstring): ``command`` is
    the Redis command it sends, ``script`` the Lua script that command runs. The
    method is retried through a failover (:func:`retrying`, ``self._failover_timeout``)
    within that span."""

    def decorate(method: _Operation) -> _Operation:
        name = method.__name__
        static: dict[str, str] = {"db.operation.name": command, "ksched.store.operation": name}
        if script is not None:
            static["db.stored_procedure.name"] = script

        @functools.wraps(method)
        async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await retrying(
                self._failover_timeout, lambda: method(self, *args, **kwargs), name
            )

        @functools.wraps(method)
        async def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not trace.get_current_span().get_span_context().is_valid:
                return await run(self, *args, **kwargs)  # no trace to join
            with _tracer.start_as_current_span(
                f"{command} {name}",
                kind=SpanKind.CLIENT,
                attributes={**self._span_attributes, **static},
                record_exception=False,
                set_status_on_exception=False,
            ) as span:
                try:
                    return await run(self, *args, **kwargs)
                except Exception as error:
                    _failed(span, error)
                    raise

        return cast(_Operation, traced)

    return decorate


def _failed(span: Span, error: Exception) -> None:
    span.record_exception(error)
    kind = type(error).__qualname__
    if isinstance(error, ResponseError) and (prefix := str(error).split(" ", 1)[0]).isupper():
        span.set_attribute("db.response.status_code", prefix)
        kind = prefix
    span.set_attribute("error.type", kind)
    span.set_status(trace.StatusCode.ERROR, redact.redact(f"{type(error).__name__}: {error}"))


def _connection_attributes(kwargs: Mapping[str, Any]) -> dict[str, str | int]:
    """The span attributes of the connection redis-py built from the URL."""
    attributes: dict[str, str | int] = {
        "db.system.name": "redis",
        "db.system": "redis",
        "db.namespace": str(kwargs.get("db", 0)),
    }
    if "path" in kwargs:
        attributes["server.address"] = str(kwargs["path"])
    else:
        attributes["server.address"] = str(kwargs.get("host", "localhost"))
        attributes["server.port"] = int(kwargs.get("port", 6379))
    return attributes
