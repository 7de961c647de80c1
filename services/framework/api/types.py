"""``PodInfo`` and ``QueuedPodInfo``: a pod with what the scheduler derives from it once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import numpy as np
from numpy.typing import NDArray

from contracts.k8s import Pod, namespaced_name
from services.common.resources import CPU, MEMORY, pod_nonzero_requests, pod_requests

Int64Array = NDArray[np.int64]
"""One int64 per node row (scores, counts, requested resources)."""

MAX_NODE_SCORE: Final = 100
"""Upstream's ``framework.MaxNodeScore``: a Score plugin's result after normalizing."""
MIN_NODE_SCORE: Final = 0
MAX_TOTAL_SCORE: Final = 2**63 - 1
"""``framework.MaxTotalScore`` (math.MaxInt64): the bound on weight * MaxNodeScore sums."""


def pod_priority(pod: Pod) -> int:
    """``corev1helpers.PodPriority``: ``spec.priority``, 0 when unset."""
    return pod.spec.priority if pod.spec.priority is not None else 0


def pod_uid(pod: Pod) -> str:
    """The pod's UID, or ``namespace/name`` for a pod published without one."""
    return pod.metadata.uid or namespaced_name(pod.metadata)


@dataclass(frozen=True, slots=True)
class PodInfo:
    """A pod and its derived data (``framework.PodInfo``), computed once per pod version.

    ``requests`` is :func:`~services.common.resources.pod_requests` (no ``pods``);
    ``nonzero_cpu`` / ``nonzero_memory`` are the non-zero amounts NodeInfo accounts for
    scoring; ``nonzero_requests`` is the full non-zero request list.
    """

    pod: Pod
    uid: str
    key: str
    priority: int
    requests: Mapping[str, int]
    nonzero_requests: Mapping[str, int]

    @property
    def nonzero_cpu(self) -> int:
        return self.nonzero_requests.get(CPU, 0)

    @property
    def nonzero_memory(self) -> int:
        return self.nonzero_requests.get(MEMORY, 0)

    @classmethod
    def of(cls, pod: Pod) -> PodInfo:
        """Raises :class:`~services.common.resources.ResourceError` (a ValueError) when a
        quantity is invalid; the informer refuses such pods, so it is rare."""
        return cls(
            pod=pod,
            uid=pod_uid(pod),
            key=namespaced_name(pod.metadata),
            priority=pod_priority(pod),
            requests=pod_requests(pod),
            nonzero_requests=pod_nonzero_requests(pod),
        )


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod in the scheduling queue (``framework.QueuedPodInfo``)."""

    pod_info: PodInfo
    timestamp: float
    """When the pod was added to the queue (or last moved to activeQ); PrioritySort's
    tie-breaker."""
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
