"""The queue's Prometheus metrics, with kube-scheduler's names and labels:

- ``scheduler_pending_pods{queue}``: pods per sub-queue, ``queue`` one of ``active``,
  ``backoff``, ``unschedulable``, ``gated``.
- ``scheduler_queue_incoming_pods_total{queue,event}``: pods that entered ``active``,
  ``backoff`` or ``unschedulable`` (gated pods included), by the event that moved them
  (``NodeAdd``, ``AssignedPodDelete``, ``ScheduleAttemptFailure``, ``BackoffComplete``,
  ``UnschedulableTimeout``…).

- ``scheduler_unschedulable_pods{plugin,profile}``: parked pods by each plugin that
  rejected them (a pod counts once per plugin), read when scraped.
- ``scheduler_inflight_events{event}``: the cluster events kept for the hints of the
  pods in flight, by label, and ``PodPopped``: the pods in flight.
- ``scheduler_event_handling_duration_seconds{event}``: handling one cluster event
  (``AssignedPodAdd``, ``UnscheduledPodUpdate``, ``NodeAdd``…).
- ``scheduler_queueing_hint_execution_duration_seconds{plugin,event,hint}``: one
  QueueingHint function.
- ``scheduler_queued_entities{queue,type}`` and
  ``scheduler_queue_incoming_entities_total{queue,event,type}``: every entity is a
  ``pod`` (upstream's ``podgroup`` entities need its GenericWorkload gate).
- ``scheduler_pod_scheduled_after_flush_total``: pods bound after the leftover flush
  moved them out of unschedulablePods.
- ``ksched_projection_lag{projection="queue"}``: event-log entries the queue's
  projection is behind the store's, as last checked.

The gauges are read from the queue when scraped, so recording costs the queue a dict
increment. Each service owns its registry (no global state);
:class:`services.common.metrics.MetricsEndpoint` serves one over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from contracts.events import LogEntry, PodEntry
from services.common.metrics import Children, exponential_buckets
from services.queue.scheduling_queue import SchedulingQueue
from services.queue.types import SubQueue

PENDING_QUEUES = (SubQueue.ACTIVE, SubQueue.BACKOFF, SubQueue.UNSCHEDULABLE, SubQueue.GATED)


class QueueCollector(Collector):
    def __init__(self, queue: SchedulingQueue) -> None:
        self._queue = queue

    def collect(self) -> Iterator[Metric]:
        pending = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Pending pods by sub-queue: 'active' in activeQ, 'backoff' in backoffQ, "
            "'unschedulable' parked after a failed attempt, 'gated' held back by a "
            "PreEnqueue plugin before any attempt.",
            labels=["queue"],
        )
        counts = self._queue.counts()
        for where in PENDING_QUEUES:
            pending.add_metric([where.value], counts[where.value])
        yield pending
        incoming = CounterMetricFamily(
            "scheduler_queue_incoming_pods",
            "Pods added to the scheduling sub-queues, by queue and by the event that moved them.",
            labels=["queue", "event"],
        )
        # Scrapes run in the endpoint's thread: copy in one C-level step, then iterate.
        entities_in = CounterMetricFamily(
            "scheduler_queue_incoming_entities",
            "Number of scheduling entities added to scheduling queues by event, queue type, "
            "and entity type. Entity types are either 'pod' (for individual pods that are "
            "not members of any podgroup) or 'podgroup'.",
            labels=["queue", "event", "type"],
        )
        for (queue, event), count in sorted(dict(self._queue.incoming).items()):
            incoming.add_metric([queue, event], count)
            entities_in.add_metric([queue, event, "pod"], count)
        yield incoming
        yield entities_in
        entities = GaugeMetricFamily(
            "scheduler_queued_entities",
            "Number of queued scheduling entities ('pod' or 'podgroup') by the queue type.",
            labels=["queue", "type"],
        )
        for where in PENDING_QUEUES:
            entities.add_metric([where.value, "pod"], counts[where.value])
        yield entities
        flushed = CounterMetricFamily(
            "scheduler_pod_scheduled_after_flush",
            "Number of pods that were successfully scheduled after being flushed from "
            "unschedulableEntities due to timeout.",
        )
        flushed.add_metric([], self._queue.scheduled_after_flush)
        yield flushed
        reasons = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will "
            "increment the gauge for all plugins that caused it to not schedule and so this "
            "metric have meaning only when broken down by plugin.",
            labels=["plugin", "profile"],
        )
        for (plugin, profile), count in sorted(self._queue.unschedulable_reasons().items()):
            reasons.add_metric([plugin, profile], count)
        yield reasons
        inflight = GaugeMetricFamily(
            "scheduler_inflight_events",
            "Number of events currently tracked in the scheduling queue.",
            labels=["event"],
        )
        for event, count in sorted(self._queue.inflight_events().items()):
            inflight.add_metric([event], count)
        yield inflight


HINT_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
EVENT_HANDLING_BUCKETS = exponential_buckets(0.0001, 2, 12)
"""Upstream's: 0.1 ms to ~200 ms."""


class QueueMetrics:
    """The queue's registry: the collector above and what is recorded as it happens."""

    def __init__(self, queue: SchedulingQueue) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(QueueCollector(queue))
        self.event_handling = Histogram(
            "scheduler_event_handling_duration_seconds",
            "Event handling latency in seconds.",
            ["event"],
            buckets=EVENT_HANDLING_BUCKETS,
            registry=self.registry,
        )
        self._handled: dict[str, Any] = {}
        hint = Histogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            ["plugin", "event", "hint"],
            buckets=HINT_BUCKETS,
            registry=self.registry,
        )
        hints = Children(hint)  # a hint runs per pending pod per event: thousands a second
        queue.hints.on_hint = lambda plugin, event, result, seconds: hints(
            plugin, event, result
        ).observe(seconds)
        self.projection_lag = Gauge(
            "ksched_projection_lag",
            "Event-log entries this service's projection is behind the store's",
            ["projection"],
            registry=self.registry,
        )

    def handled(self, event: str, seconds: float) -> None:
        """One cluster event handled (the label's child cached: this is per event)."""
        child = self._handled.get(event)
        if child is None:
            child = self._handled[event] = self.event_handling.labels(event)
        child.observe(seconds)


def registry_for(queue: SchedulingQueue) -> CollectorRegistry:
    """A fresh registry exporting ``queue``'s metrics."""
    return QueueMetrics(queue).registry


_ACTIONS = {"ADDED": "Add", "MODIFIED": "Update", "DELETED": "Delete"}


def event_label(entry: LogEntry) -> str:
    """The label ``scheduler_event_handling_duration_seconds`` gives an event, as
    upstream's handlers name them: ``AssignedPodAdd``, ``UnscheduledPodUpdate``,
    ``NodeDelete``, ``PersistentVolumeClaimAdd``… (bounded: kinds times three actions)."""
    action = _ACTIONS.get(entry.type, "Update")
    if isinstance(entry, PodEntry):
        kind = "AssignedPod" if entry.object.spec.node_name else "UnscheduledPod"
    else:
        kind = type(entry.object).__name__
    return f"{kind}{action}"
