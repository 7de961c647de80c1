"""Prometheus plumbing every service shares: a per-service registry served over HTTP
(:class:`MetricsEndpoint`; its server thread, :class:`ServedEndpoint`, also runs the
health endpoints), and kube-scheduler's histogram buckets.

Each service owns its registry (no global state), so several services in one process
(the embedded cluster, the tests) never mix their series.
"""

from __future__ import annotations

from threading import Thread
from typing import Generic, TypeVar
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.metrics import MetricWrapperBase


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """component-base's ``ExponentialBuckets``: ``count`` upper bounds from ``start``,
    each ``factor`` times the previous (``+Inf`` is added by the client library)."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError(f"exponential_buckets({start}, {factor}, {count}): bad arguments")
    return tuple(start * factor**i for i in range(count))


ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)
"""Upstream's attempt buckets: 1 ms to ~16 s."""
EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
"""Upstream's: 0.1 ms, the last bucket [~200 ms, +Inf)."""


def schedule_attempts(registry: CollectorRegistry) -> tuple[Counter, Histogram]:
    """``scheduler_schedule_attempts_total`` and
    ``scheduler_scheduling_attempt_duration_seconds`` (``result``, ``profile``): the
    scheduler counts the attempts that end there, the binder the ``scheduled`` ones."""
    attempts = Counter(
        "scheduler_schedule_attempts",
        "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
        "could not be scheduled, while 'error' means an internal scheduler problem.",
        ["result", "profile"],
        registry=registry,
    )
    duration = Histogram(
        "scheduler_scheduling_attempt_duration_seconds",
        "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
        ["result", "profile"],
        buckets=ATTEMPT_BUCKETS,
        registry=registry,
    )
    return attempts, duration


def extension_point_duration(registry: CollectorRegistry) -> Histogram:
    """``scheduler_framework_extension_point_duration_seconds`` (``extension_point``,
    ``status``, ``profile``): the scheduler times the points of its cycle, the binder
    those of the binding cycle."""
    return Histogram(
        "scheduler_framework_extension_point_duration_seconds",
        "Latency for running all plugins of a specific extension point.",
        ["extension_point", "status", "profile"],
        buckets=EXTENSION_POINT_BUCKETS,
        registry=registry,
    )


def goroutines(registry: CollectorRegistry) -> Gauge:
    """``scheduler_goroutines{operation}``."""
    return Gauge(
        "scheduler_goroutines",
        "Number of running goroutines split by the work they do such as binding.",
        ["operation"],
        registry=registry,
    )


M = TypeVar("M", bound=MetricWrapperBase)


class Children(Generic[M]):
    """A labelled metric's children, each looked up once: ``labels()`` validates and
    locks on every call, which per pod cost the binder a twentieth of its time."""

    def __init__(self, metric: M) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


class ServedEndpoint:
    """An HTTP server that a daemon thread runs: the port it listens on, and
    :meth:`close` (the server stops, then the thread, within 5 seconds)."""

    def __init__(self, server: WSGIServer, thread: Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class MetricsEndpoint(ServedEndpoint):
    """``/metrics`` on ``port`` (0: any free port) in a daemon thread."""

    def __init__(self, registry: CollectorRegistry, port: int, addr: str = "0.0.0.0") -> None:
        super().__init__(*start_http_server(port, addr=addr, registry=registry))


def serve_metrics(registry: CollectorRegistry, port: int | None) -> MetricsEndpoint | None:
    """A service's ``/metrics`` on ``port`` (0: any free port); ``None``: not served."""
    return None if port is None else MetricsEndpoint(registry, port)


def close_endpoint(endpoint: ServedEndpoint | None) -> None:
    """Close ``endpoint``, if it was served (a service's stop, after :func:`serve_metrics`)."""
    if endpoint is not None:
        endpoint.close()


__all__ = [
    "ATTEMPT_BUCKETS",
    "EXTENSION_POINT_BUCKETS",
    "Children",
    "MetricsEndpoint",
    "ServedEndpoint",
    "close_endpoint",
    "exponential_buckets",
    "extension_point_duration",
    "goroutines",
    "schedule_attempts",
    "serve_metrics",
]
