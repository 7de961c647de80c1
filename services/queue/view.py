"""The :class:`~contracts.queueview.QueueView` the service publishes to the store:
counts per sub-queue and the first pods of each, in the order they would leave it."""

from __future__ import annotations

from typing import Final

from contracts.k8s import namespaced_name
from contracts.queueview import QueuedPod, QueueView
from services.queue.scheduling_queue import SchedulingQueue
from services.queue.types import QueueEntry, SubQueue

HEADS: Final = 20
"""Pods shown per sub-queue."""


def queue_view(queue: SchedulingQueue, *, at: float, applied_seq: int) -> QueueView:
    heads = queue.heads(HEADS)
    return QueueView(
        at=at,
        counts=queue.counts(),
        heads={where.value: [_shown(queue, i) for i in infos] for where, infos in heads.items()},
        applied_seq=applied_seq,
    )


def _shown(queue: SchedulingQueue, info: QueueEntry) -> QueuedPod:
    backoff_until = None
    if info.where in (SubQueue.BACKOFF, SubQueue.UNSCHEDULABLE) and queue.is_backing_off(info):
        backoff_until = queue.backoff_time(info)
    gated = info.where is SubQueue.GATED
    plugins: list[str] = []
    if info.where in (SubQueue.BACKOFF, SubQueue.UNSCHEDULABLE):
        plugins = sorted(info.rejector_plugins)
    elif gated:
        plugins = [info.gating_plugin]
    return QueuedPod(
        pod=namespaced_name(info.pod.metadata),
        uid=info.uid,
        priority=info.priority,
        attempts=info.attempts,
        since=info.since,
        backoff_until=backoff_until,
        plugins=plugins,
        gates=[g.name for g in info.pod.spec.scheduling_gates] if gated else [],
        message=info.message if gated else "",
    )
