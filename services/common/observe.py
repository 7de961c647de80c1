"""What every service shows of itself on its metrics port: ``/metrics`` (the service's
own series, ksched's edge series and the process's), and kube-style health endpoints.

- ``/livez`` and ``/healthz``: the event loop turns. A heartbeat task stamps the time
  every :data:`BEAT`; the HTTP thread answers 200 while the last stamp is younger than
  :data:`LIVE_WITHIN`, else 500. A loop stuck in a long computation or a deadlock is
  therefore seen from outside it.
- ``/readyz``: the service has started (it reached the broker and Redis and caught up
  with the event log: the informer replayed its log into Redis, the queue and the
  scheduler loaded their projection at the store's seq) and, as checked every
  :data:`CHECK_EVERY` on the loop, the broker connection is up and Redis answers.

Each endpoint prints one line per check, kube-apiserver's style (``[+]broker ok``,
``[-]redis failed: <reason>``) and a last line ``<endpoint> check passed|failed``.

ksched's own series (``ksched_``), counted at the edges so every service has them:

- ``ksched_messages_published_total{exchange}``, ``ksched_messages_consumed_total{queue}``,
  ``ksched_messages_dead_lettered_total{queue}`` (rejected by the handler, or failed
  twice), ``ksched_batch_size{queue}`` (deliveries per handler call),
  ``ksched_publish_confirm_duration_seconds`` (one publish call, until the broker
  confirmed all of it);
- ``ksched_redis_call_duration_seconds{operation}``: one store operation (a Lua script
  or a pipeline), by the store method's name;
- ``ksched_broker_connected``, ``ksched_redis_connected``: 1 or 0, as last checked.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    make_wsgi_app,
)
from prometheus_client.registry import Collector

from services.common.bus.base import (
    BatchHandler,
    Bus,
    Consumer,
    Delivery,
    Message,
    Rejection,
    unavailable,
)
from services.common.metrics import ServedEndpoint, exponential_buckets
from services.common.proxy import AsyncMethods

log = logging.getLogger("ksched.observe")

BEAT: Final = 1.0
"""Seconds between two heartbeats of the event loop."""
LIVE_WITHIN: Final = 10.0
"""A heartbeat older than this: the loop is stuck, ``/livez`` fails."""
CHECK_EVERY: Final = 2.0
"""Seconds between two checks of the broker and Redis."""
CHECK_TIMEOUT: Final = 2.0
"""A check that takes longer fails."""
STOP_WITHIN: Final = 1.0
"""Seconds stopping the watchdog may take."""

DEFAULT_PORTS: Final = {
    "informer": 10260,
    "queue": 10261,
    "scheduler": 10262,
    "binder": 10263,
    "descheduler": 10264,
}
"""Each service's documented metrics and health port (compose, ``ksched up``)."""

CONFIRM_BUCKETS: Final = exponential_buckets(0.0005, 2, 14)
"""0.5 ms to ~4 s."""
REDIS_BUCKETS: Final = exponential_buckets(0.0001, 2, 16)
"""0.1 ms to ~3 s."""
BATCH_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class EdgeMetrics:
    """ksched's series of one process's bus and store."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.published = Counter(
            "ksched_messages_published", "Messages published, by exchange", ["exchange"], registry=r
        )
        self.consumed = Counter(
            "ksched_messages_consumed", "Messages consumed, by queue", ["queue"], registry=r
        )
        self.dead_lettered = Counter(
            "ksched_messages_dead_lettered",
            "Messages dead-lettered by this process's consumers, by queue",
            ["queue"],
            registry=r,
        )
        self.batch_size = Histogram(
            "ksched_batch_size",
            "Deliveries handed to one handler call, by queue",
            ["queue"],
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.confirm = Histogram(
            "ksched_publish_confirm_duration_seconds",
            "One publish call, until the broker confirmed every message of it",
            buckets=CONFIRM_BUCKETS,
            registry=r,
        )
        self.redis = Histogram(
            "ksched_redis_call_duration_seconds",
            "One store operation against Redis (a script or a pipeline), by operation",
            ["operation"],
            buckets=REDIS_BUCKETS,
            registry=r,
        )
        self.broker_connected = Gauge(
            "ksched_broker_connected", "1 while the broker connection is up", registry=r
        )
        self.redis_connected = Gauge("ksched_redis_connected", "1 while Redis answers", registry=r)


class MeteredBus(Bus):
    """``inner`` with every publish and consume counted in ``metrics`` (``consume`` is
    :class:`Bus`'s, over the counted :meth:`consume_raw`)."""

    def __init__(self, inner: Bus, metrics: EdgeMetrics) -> None:
        self.inner = inner
        self.metrics = metrics

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def declare(self, queues: Iterable[Any]) -> None:
        await self.inner.declare(queues)

    async def publish(self, messages: Sequence[Message]) -> None:
        started = time.perf_counter()
        await self.inner.publish(messages)
        self.metrics.confirm.observe(time.perf_counter() - started)
        counts: dict[str, int] = {}
        for message in messages:
            counts[message.exchange] = counts.get(message.exchange, 0) + 1
        for exchange, count in counts.items():
            self.metrics.published.labels(exchange).inc(count)

    async def consume_raw(
        self,
        queue: Any,
        handler: BatchHandler,
        *,
        max_batch: int = 256,
        prefetch: int | None = None,
        linger: float = 0.0,
    ) -> Consumer:
        m = self.metrics
        name = queue.name
        consumed, batches, dead = m.consumed.labels(name), m.batch_size.labels(name), None

        async def counted(deliveries: Sequence[Delivery]) -> Sequence[Rejection] | None:
            nonlocal dead
            consumed.inc(len(deliveries))
            batches.observe(len(deliveries))
            try:
                rejections = await handler(deliveries)
            except Exception as error:
                if not unavailable(error):  # redelivered ones are dead-lettered now
                    twice = sum(1 for d in deliveries if d.redelivered)
                    if twice:
                        m.dead_lettered.labels(name).inc(twice)
                raise
            if rejections:
                m.dead_lettered.labels(name).inc(len(rejections))
            return rejections

        return await self.inner.consume_raw(
            queue, counted, max_batch=max_batch, prefetch=prefetch, linger=linger
        )

    def fetch(self, queue: Any, *, limit: int | None = None) -> Any:
        return self.inner.fetch(queue, limit=limit)

    async def purge(self, queue: Any) -> int:
        return await self.inner.purge(queue)

    async def close(self) -> None:
        await self.inner.close()

    def connected(self) -> bool:
        check: Callable[[], bool] | None = getattr(self.inner, "connected", None)
        return True if check is None else check()


class MeteredStore(AsyncMethods):
    """``inner`` (a ClusterStore) with every async operation timed by its name."""

    plain = frozenset({"close"})

    def __init__(self, inner: Any, metrics: EdgeMetrics) -> None:
        super().__init__(inner)
        self._histogram = metrics.redis

    def wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        observe = self._histogram.labels(name).observe

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                observe(time.perf_counter() - started)

        return timed


Check = Callable[[], Awaitable[None]]
"""An async check: returns when healthy, raises with the reason when not."""


@dataclass
class Health:
    """The state the HTTP thread reads: the last heartbeat and the last checks' results."""

    service: str
    clock: Callable[[], float] = time.monotonic
    started: bool = False
    beat: float = field(default_factory=time.monotonic)
    results: dict[str, str | None] = field(default_factory=dict)
    """Check name → None (ok) or the reason it failed; absent: not checked yet."""

    def live(self) -> tuple[bool, list[str]]:
        age = self.clock() - self.beat
        if age <= LIVE_WITHIN:
            return True, ["[+]ping ok", "[+]event-loop ok"]
        return False, ["[+]ping ok", f"[-]event-loop failed: no heartbeat for {age:.1f} s"]

    def ready(self) -> tuple[bool, list[str]]:
        ok, lines = self.live()
        lines = list(lines)
        if self.started:
            lines.append(f"[+]{self.service}-started ok")
        else:
            ok = False
            lines.append(f"[-]{self.service}-started failed: starting")
        for name in ("broker", "redis"):
            if name not in self.results:
                ok = False
                lines.append(f"[-]{name} failed: not checked yet")
            elif (reason := self.results[name]) is None:
                lines.append(f"[+]{name} ok")
            else:
                ok = False
                lines.append(f"[-]{name} failed: {reason}")
        return ok, lines


class Watchdog:
    """The loop side of :class:`Health`: the heartbeat and the periodic checks."""

    def __init__(
        self,
        health: Health,
        checks: dict[str, Check],
        metrics: EdgeMetrics | None = None,
        *,
        observers: Sequence[Callable[[], Awaitable[None]]] = (),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``observers``: the service's periodic measurements (a projection's lag),
        run after the checks while the service is started."""
        self.health = health
        self.checks = checks
        self.metrics = metrics
        self.observers = list(observers)
        self._sleep = sleep
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._heartbeat(), name="heartbeat"),
            asyncio.create_task(self._check_forever(), name="health-checks"),
        ]

    async def stop(self) -> None:
        """Cancel the heartbeat and the checks; a check stuck in a closing client is
        left behind after STOP_WITHIN rather than holding up the process's exit."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_WITHIN)

    async def _heartbeat(self) -> None:
        while True:
            self.health.beat = self.health.clock()
            await self._sleep(BEAT)

    async def _check_forever(self) -> None:
        while True:
            if self.health.started:  # before, the service itself is reaching the edges
                await self.check_once()
            await self._sleep(CHECK_EVERY)

    async def check_once(self) -> None:
        for name, check in self.checks.items():
            try:
                async with asyncio.timeout(CHECK_TIMEOUT):
                    await check()
                result = None
            except TimeoutError:
                result = f"no answer within {CHECK_TIMEOUT:g} s"
            except Exception as error:
                result = (str(error) or type(error).__name__).splitlines()[0][:200]
            self.health.results[name] = result
            gauge = None
            if self.metrics is not None:
                gauge = {
                    "broker": self.metrics.broker_connected,
                    "redis": self.metrics.redis_connected,
                }.get(name)
            if gauge is not None:
                gauge.set(1 if result is None else 0)
        if self.health.started:
            for observe in self.observers:
                try:
                    async with asyncio.timeout(CHECK_TIMEOUT):
                        await observe()
                except Exception as error:  # a measurement, never the service's fault
                    log.debug("observing failed: %s", error)


def broker_check(bus: Any) -> Check:
    async def check() -> None:
        connected: Callable[[], bool] | None = getattr(bus, "connected", None)
        if connected is not None and not connected():
            raise ConnectionError("not connected to the broker")

    return check


def redis_check(store: Any) -> Check:
    async def check() -> None:
        await store.applied_seq()

    return check


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ThreadingServer(WSGIServer):
    daemon_threads = True


class ServiceEndpoint(ServedEndpoint):
    """``/metrics``, ``/healthz``, ``/livez``, ``/readyz`` on ``port`` (0: any free one),
    served by a daemon thread; ``registries``: every registry to expose."""

    def __init__(
        self,
        health: Health,
        registries: Sequence[CollectorRegistry],
        port: int,
        addr: str = "0.0.0.0",
    ) -> None:
        self.health = health
        combined = CollectorRegistry(auto_describe=False)
        for registry in registries:
            combined.register(_Forward(registry))
        self.registry = combined
        metrics_app = make_wsgi_app(combined)

        def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "/")
            if path in ("/healthz", "/livez", "/readyz"):
                ok, lines = health.ready() if path == "/readyz" else health.live()
                endpoint = path.strip("/")
                lines = [*lines, f"{endpoint} check {'passed' if ok else 'failed'}"]
                status = (
                    "200 OK"
                    if ok
                    else (
                        "503 Service Unavailable"
                        if path == "/readyz"
                        else "500 Internal Server Error"
                    )
                )
                body = ("\n".join(lines) + "\n").encode()
                start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
                return [body]
            if path in ("/metrics", "/"):
                return metrics_app(environ, start_response)  # type: ignore[no-any-return]
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found: /metrics, /healthz, /livez, /readyz\n"]

        server = make_server(addr, port, app, server_class=_ThreadingServer, handler_class=_Quiet)
        thread = threading.Thread(target=server.serve_forever, name="metrics-endpoint", daemon=True)
        thread.start()
        super().__init__(server, thread)

    def add(self, registry: CollectorRegistry) -> None:
        """Expose ``registry`` too (a service built once it leads its lease)."""
        self.registry.register(_Forward(registry))


class _Forward(Collector):
    """One registry's families, collected into another."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterable[Any]:
        return self._registry.collect()


def process_registry() -> CollectorRegistry:
    """The process's ``process_*`` series (memory, cpu, open files)."""
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    return registry


__all__ = [
    "DEFAULT_PORTS",
    "EdgeMetrics",
    "Health",
    "MeteredBus",
    "MeteredStore",
    "ServiceEndpoint",
    "Watchdog",
    "broker_check",
    "process_registry",
    "redis_check",
]
