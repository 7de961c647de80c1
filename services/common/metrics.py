"""Prometheus plumbing every service shares: a per-service registry served over HTTP
(:class:`MetricsEndpoint`), and kube-scheduler's histogram buckets.

Each service owns its registry (no global state), so several services in one process
(the embedded cluster, the tests) never mix their series.
"""

from __future__ import annotations

from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """component-base's ``ExponentialBuckets``: ``count`` upper bounds from ``start``,
    each ``factor`` times the previous (``+Inf`` is added by the client library)."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError(f"exponential_buckets({start}, {factor}, {count}): bad arguments")
    return tuple(start * factor**i for i in range(count))


class MetricsEndpoint:
    """``/metrics`` on ``port`` (0: any free port) in a daemon thread."""

    def __init__(self, registry: CollectorRegistry, port: int, addr: str = "0.0.0.0") -> None:
        self._server: WSGIServer
        self._thread: Thread
        self._server, self._thread = start_http_server(port, addr=addr, registry=registry)

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


__all__ = ["MetricsEndpoint", "exponential_buckets"]
