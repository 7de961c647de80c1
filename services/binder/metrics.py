"""The binder's Prometheus metrics, with kube-scheduler's names, labels and buckets
(``pkg/scheduler/metrics/metrics.go``) for the work that happens here:

- ``scheduler_permit_wait_duration_seconds{result}``: how long a pod waited at Permit,
  from its first wait to its outcome; ``result`` is the status code as Go prints it
  (``Success``, ``Unschedulable``, ``Error``).
- ``scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}``
  for the binding cycle's points run here: ``PreBind``, ``Bind``, ``PostBind`` and
  ``Unreserve`` (the scheduling cycle's points are the scheduler's).
- Once the Binding is published (upstream counts after binding, too):
  ``scheduler_schedule_attempts_total{result="scheduled",profile}``,
  ``scheduler_scheduling_attempt_duration_seconds{result="scheduled",profile}`` from the
  attempt's start (``BindRequest.started``), ``scheduler_pod_scheduling_attempts`` and
  ``scheduler_pod_scheduling_sli_duration_seconds{attempts}`` from the pod's first
  acceptance (``BindRequest.at``), ``attempts`` being ``1`` … ``15+`` as upstream's.
- ``scheduler_goroutines{operation="binding"}``: binding cycles in progress.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

from services.common.metrics import (
    Children,
    exponential_buckets,
    extension_point_duration,
    goroutines,
    schedule_attempts,
)

PERMIT_WAIT_BUCKETS = exponential_buckets(0.001, 2, 15)
"""Upstream's: 1 ms to ~16 s."""
SLI_BUCKETS = exponential_buckets(0.01, 2, 20)
"""Upstream's: 10 ms, the last bucket [~88 min, +Inf)."""
ATTEMPTS_BUCKETS = exponential_buckets(1, 2, 5)


def attempts_label(attempts: int) -> str:
    """Upstream's ``getAttemptsLabel``: 15 and more are one label."""
    return "15+" if attempts >= 15 else str(attempts)


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
        self.extension_point = extension_point_duration(self.registry)

        r = self.registry
        self.attempts, self.attempt_duration = schedule_attempts(r)
        self.sli = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue and might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=SLI_BUCKETS,
            registry=r,
        )
        self.pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=ATTEMPTS_BUCKETS,
            registry=r,
        )
        self.goroutines = goroutines(r)
        self._points = Children(self.extension_point)
        self._attempts = Children(self.attempts)
        self._durations = Children(self.attempt_duration)
        self._sli = Children(self.sli)

    def scheduled(self, profile: str, attempts: int, attempt_seconds: float, sli: float) -> None:
        self._attempts("scheduled", profile).inc()
        self._durations("scheduled", profile).observe(max(attempt_seconds, 0.0))
        self.pod_attempts.observe(attempts)
        self._sli(attempts_label(attempts)).observe(max(sli, 0.0))

    def waited(self, result: str, seconds: float) -> None:
        self.permit_wait.labels(result).observe(max(seconds, 0.0))

    def point(self, point: str, status: str, profile: str, seconds: float) -> None:
        """An extension point's duration (runtime.instrument.Timed feeds it)."""
        self._points(point, status, profile).observe(seconds)


__all__ = ["BinderMetrics"]
