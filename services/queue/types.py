"""What the queue keeps per pod (:class:`QueueEntry`): upstream's ``QueuedPodInfo`` plus where
the pod is."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from contracts.k8s import Pod, PodCondition
from services.framework.api import types as framework
from services.framework.api.events import ClusterEvent


class Now(Protocol):
    """The queue's clock (services.common.clock): seconds."""

    def now(self) -> float: ...


class SubQueue(enum.Enum):
    """The sub-queue a pod is in; the values are the ``queue`` labels of
    ``scheduler_pending_pods`` (``inflight`` is ksched's: dispatched, no result yet)."""

    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    GATED = "gated"
    IN_FLIGHT = "inflight"


@dataclass(slots=True, eq=False)
class QueueEntry(framework.QueuedPodInfo):
    """A pending pod in the queue. ``pod_info.priority`` is the resolved priority
    (spec.priority or its PriorityClass), which is what QueueSort compares."""

    uid: str = ""
    order: int = 0
    """Arrival order (the log seq that added it): the last tie-breaker of activeQ."""
    unschedulable_count: int = 0
    """Attempts that ended with rejecting plugins (``UnschedulableCount``)."""
    consecutive_errors_count: int = 0
    """Attempts in a row that ended with an error, no plugin to blame
    (``ConsecutiveErrorsCount``); reset by the next rejection."""
    backoff_expiration: float | None = None
    """Cached end of the current backoff (``BackoffExpiration``); None: not computed."""
    gating_plugin: str = ""
    """The PreEnqueue plugin that keeps the pod out of activeQ (``GatingPlugin``)."""
    gating_plugin_events: tuple[ClusterEvent, ...] = ()
    """The events that plugin registered: only those can un-gate the pod."""
    was_flushed_from_unschedulable: bool = False
    where: SubQueue = SubQueue.ACTIVE
    since: float = 0.0
    """Clock time the pod entered its current sub-queue."""
    message: str = ""
    """Why its last attempt failed (gated: the gating plugin's message)."""
    last_pre_enqueue_rejection_message: str | None = None
    """``lastPreEnqueueRejectionMessage`` (KEP-5501): the PreEnqueue message the pod's
    PodScheduled condition says or is about to say; "" none; None not looked at yet."""
    pre_enqueue_condition: PodCondition | None = None
    """The PodScheduled condition the pod shows as far as the queue knows (from the pod
    when first seen, then what the queue published; see pod_status)."""

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod

    @property
    def priority(self) -> int:
        return self.pod_info.priority

    @property
    def profile(self) -> str:
        return self.pod_info.pod.spec.scheduler_name

    @property
    def gated(self) -> bool:
        return bool(self.gating_plugin)

    @property
    def rejector_plugins(self) -> set[str]:
        """``UnschedulablePlugins`` and ``PendingPlugins``: the plugins whose hints decide."""
        if not self.pending_plugins:
            return self.unschedulable_plugins
        return self.unschedulable_plugins | self.pending_plugins
