"""The scheduler's Prometheus metrics, with kube-scheduler's names and buckets
(``pkg/scheduler/metrics/metrics.go``), for the work done here:

- ``scheduler_preemption_attempts_total``: PostFilter runs of DefaultPreemption (every
  attempt that found no node, in a profile with DefaultPreemption).
- ``scheduler_preemption_victims``: victims per preemption (buckets 1, 2, 4 … 64).

and ksched's own:

- ``ksched_nomination_conflicts_total``: preemptions not carried out because another
  replica nominated a pod to the node meanwhile (the pod was scheduled again).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from services.common.metrics import exponential_buckets

VICTIM_BUCKETS = exponential_buckets(1, 2, 7)
"""Upstream's: [64, +Inf) is one bucket."""


class SchedulerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=self.registry,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims for preemption initiated by a single pod",
            buckets=VICTIM_BUCKETS,
            registry=self.registry,
        )
        self.nomination_conflicts = Counter(
            "ksched_nomination_conflicts",
            "Preemptions refused because another replica nominated a pod to the node first",
            registry=self.registry,
        )


__all__ = ["SchedulerMetrics"]
