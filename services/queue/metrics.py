"""The queue's Prometheus metrics, with kube-scheduler's names and labels:

- ``scheduler_pending_pods{queue}``: pods per sub-queue, ``queue`` one of ``active``,
  ``backoff``, ``unschedulable``, ``gated``.
- ``scheduler_queue_incoming_pods_total{queue,event}``: pods that entered ``active``,
  ``backoff`` or ``unschedulable`` (gated pods included), by the event that moved them
  (``NodeAdd``, ``AssignedPodDelete``, ``ScheduleAttemptFailure``, ``BackoffComplete``,
  ``UnschedulableTimeout``…).

Both are read from the queue when scraped, so recording costs the queue a dict
increment. Each service owns its registry (no global state);
:class:`services.common.metrics.MetricsEndpoint` serves one over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

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
        for (queue, event), count in sorted(dict(self._queue.incoming).items()):
            incoming.add_metric([queue, event], count)
        yield incoming


def registry_for(queue: SchedulingQueue) -> CollectorRegistry:
    """A fresh registry exporting ``queue``'s metrics."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(QueueCollector(queue))
    return registry
