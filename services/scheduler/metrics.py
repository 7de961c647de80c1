"""The scheduler's Prometheus metrics, with kube-scheduler's names and buckets
(``pkg/scheduler/metrics/metrics.go``), for the work done here:

- ``scheduler_schedule_attempts_total{result,profile}`` and
  ``scheduler_scheduling_attempt_duration_seconds{result,profile}`` for the attempts
  that end here (``unschedulable``, ``error``); ``scheduled`` is counted by the binder
  when the Binding is published, as upstream counts it after binding. An attempt's
  duration runs from when its batch was taken up.
- ``scheduler_scheduling_algorithm_duration_seconds``: one ``schedule_pod``.
- ``scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}``
  for PreFilter, Filter (one columnar pass over every node: ksched's), PostFilter,
  PreScore, Score, Reserve and Permit.
- ``scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}`` for the
  PreFilter, Filter, PreScore and Score plugins, in 10% of the attempts (upstream's
  sampling).
- ``scheduler_plugin_evaluation_total{plugin,extension_point,profile}``: PreFilter and
  PreScore runs, and for Filter and Score the nodes each plugin evaluated.
- ``scheduler_cache_size{type}``: nodes, pods and assumed pods in the snapshot, after
  each batch and every second (as upstream's cache refreshes them).
- ``scheduler_goroutines{operation}``: ksched runs no goroutines; the binder reports
  its binding tasks under ``binding``.

- ``scheduler_preemption_attempts_total``: PostFilter runs of DefaultPreemption (every
  attempt that found no node, in a profile with DefaultPreemption).
- ``scheduler_preemption_victims``: victims per preemption (buckets 1, 2, 4 … 64).

and ksched's own:

- ``ksched_nomination_conflicts_total``: preemptions not carried out because another
  replica nominated a pod to the node meanwhile (the pod was scheduled again).
- ``ksched_store_assume_conflicts_total``: reservations the store refused because the
  node no longer had the room (another replica took it), or a DRA device they take is
  held by another pod's reservation or an allocated claim.
- ``ksched_store_domain_conflicts_total``: reservations the store refused because
  another replica placed a pod meanwhile in a domain the decision read (a node, a
  topology domain, a ReadWriteOncePod claim; see scheduler.domains).
- ``ksched_store_release_conflicts_total``: Coscheduling PostFilter rejections (a pod
  group's waiting pods given up) the store refused because another group's rejection
  gave room back since this replica's view; the failed pod was scheduled again, at
  most ``max_conflict_retries`` times (scheduler.releases). One scheduler alone is
  never refused.
- ``ksched_scheduling_cycle_cpu_seconds_total``: the CPU time (this thread's, so neither
  the other threads' nor time waiting for the CPU) spent inside ``schedule_pod``, the
  span ``scheduler_scheduling_algorithm_duration_seconds`` times: ``ksched bench``
  reads it before and after its measured window for the cycle's own CPU per pod
  (bench.cpu). Two clock reads per attempt.
- ``ksched_projection_lag{projection}``: event-log entries the scheduler's snapshot is
  behind the store's projection, as last checked.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from services.common.metrics import (
    ATTEMPT_BUCKETS,
    Children,
    exponential_buckets,
    extension_point_duration,
    goroutines,
    schedule_attempts,
)

VICTIM_BUCKETS = exponential_buckets(1, 2, 7)
"""Upstream's: [64, +Inf) is one bucket."""
PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
PLUGIN_SAMPLE_PERCENT = 10
"""Upstream's ``pluginMetricsSamplePercent``."""


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
        r = self.registry
        self.attempts, self.attempt_duration = schedule_attempts(r)
        self.algorithm = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=ATTEMPT_BUCKETS,
            registry=r,
        )
        self.cycle_cpu = Counter(
            "ksched_scheduling_cycle_cpu_seconds",
            "CPU seconds spent inside schedule_pod (the scheduling algorithm), this thread's",
            registry=r,
        )
        self.extension_point = extension_point_duration(r)
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=PLUGIN_BUCKETS,
            registry=r,
        )
        self._evaluations: dict[tuple[str, str, str], int] = {}
        """(plugin, extension point, profile) → count: a dict increment per plugin run
        (the hot path), exported as a counter family when scraped."""
        r.register(_Evaluations(self._evaluations))
        self._points = Children(self.extension_point)
        self._plugins = Children(self.plugin_duration)
        self.cache_size = Gauge(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"],
            registry=r,
        )
        self.goroutines = goroutines(r)
        self.assume_conflicts = Counter(
            "ksched_store_assume_conflicts",
            "Reservations the store refused because the node no longer had the room",
            registry=r,
        )
        self.domain_conflicts = Counter(
            "ksched_store_domain_conflicts",
            "Reservations the store refused because another replica placed a pod meanwhile "
            "in a domain the decision read",
            registry=r,
        )
        self.release_conflicts = Counter(
            "ksched_store_release_conflicts",
            "Pod group rejections the store refused because another group's release came "
            "first since this replica's view",
            registry=r,
        )
        self.projection_lag = Gauge(
            "ksched_projection_lag",
            "Event-log entries this service's projection is behind the store's",
            ["projection"],
            registry=r,
        )
        self.sample_percent = PLUGIN_SAMPLE_PERCENT
        self._rng = random.Random()

    # -- the framework's Recorder ------------------------------------------------

    def point(self, point: str, status: str, profile: str, seconds: float) -> None:
        self._points(point, status, profile).observe(seconds)

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        self._plugins(plugin, point, status).observe(seconds)

    def evaluated(self, plugin: str, point: str, profile: str, count: int) -> None:
        if count:
            key = (plugin, point, profile)
            self._evaluations[key] = self._evaluations.get(key, 0) + count

    def evaluations(self) -> dict[tuple[str, str, str], int]:
        return dict(self._evaluations)

    def sample(self) -> bool:
        """Its own generator: the framework's (tie-breaking) sequence stays as seeded."""
        return self._rng.randrange(100) < self.sample_percent


class _Evaluations(Collector):
    """``scheduler_plugin_evaluation_total`` from the counts kept in a dict."""

    def __init__(self, counts: dict[tuple[str, str, str], int]) -> None:
        self._counts = counts

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "scheduler_plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            labels=["plugin", "extension_point", "profile"],
        )
        for key, count in sorted(dict(self._counts).items()):  # one C-level copy
            family.add_metric(list(key), count)
        yield family


__all__ = ["SchedulerMetrics"]
