"""The binder's Prometheus metrics, with kube-scheduler's names, labels and buckets
(``pkg/scheduler/metrics/metrics.go``) for the work that happens here:

- ``scheduler_permit_wait_duration_seconds{result}``: how long a pod waited at Permit,
  from its first wait to its outcome; ``result`` is the status code as Go prints it
  (``Success``, ``Unschedulable``, ``Error``).
- ``scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}``
  for the binding cycle's points run here: ``PreBind``, ``Bind``, ``PostBind`` and
  ``Unreserve`` (the scheduling cycle's points are the scheduler's).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

from services.common.metrics import exponential_buckets

PERMIT_WAIT_BUCKETS = exponential_buckets(0.001, 2, 15)
"""Upstream's: 1 ms to ~16 s."""
EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
"""Upstream's: 0.1 ms, the last bucket [~200 ms, +Inf)."""


class BinderMetrics:
    """The binder's series on a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.permit_wait = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"],
            buckets=PERMIT_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.extension_point = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=EXTENSION_POINT_BUCKETS,
            registry=self.registry,
        )

    def waited(self, result: str, seconds: float) -> None:
        self.permit_wait.labels(result).observe(max(seconds, 0.0))

    def ran(self, point: str, status: str, profile: str, seconds: float) -> None:
        self.extension_point.labels(point, status, profile).observe(seconds)


__all__ = ["BinderMetrics"]
