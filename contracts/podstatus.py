"""A pod's status update (``ksched.decisions``, routing key ``status.<namespace>``): its
scheduling condition, published by the queue (KEP-5501, why a pod is pending when
PreEnqueue holds it back), or the claim made for its extended resources, by the binder.

A :class:`PodStatusPatch` is the status update kube-scheduler would make on the pod
(``pods/status``), for a client to apply:

- ``condition`` set: the pod's ``PodScheduled`` condition becomes this one (status
  ``False``, reason ``NotReadyForScheduling``, the PreEnqueue plugin's message) — a
  strategic merge patch of ``status.conditions``, whose merge key is ``type``.
- ``condition`` absent, ``cleared`` set (a clear): the pod passes PreEnqueue again, so
  remove its ``PodScheduled`` condition if it still has ``cleared``'s reason (a newer
  condition set by someone else stays).
- ``extendedResourceClaimStatus`` set (neither ``condition`` nor ``cleared``): published
  by the binder at DynamicResources' PreBind, after the ``claim.<namespace>`` decision
  that creates the pod's extended-resource claim and before the pod's Binding: set the
  pod's ``status.extendedResourceClaimStatus`` to it (upstream's PreBind patches
  ``pods/status`` so; DRAExtendedResource).

The queue publishes a condition patch only after the pod stayed in that state for 5
seconds, and never one the pod's condition already says.
"""

from __future__ import annotations

from typing import Final

from contracts.k8s.base import Wire
from contracts.k8s.pod import PodCondition, PodExtendedResourceClaimStatus

POD_SCHEDULED: Final = "PodScheduled"
"""The condition type."""
NOT_READY_FOR_SCHEDULING: Final = "NotReadyForScheduling"
"""``PodReasonNotReadyForScheduling``: the scheduler has not tried the pod, one of its
PreEnqueue checks failed. Also the reason of the Event published with the condition."""
SCHEDULING_GATED: Final = "SchedulingGated"
"""``PodReasonSchedulingGated``: the reason the API server gives a pod created with
scheduling gates."""
SCHEDULING_GATED_MESSAGE: Final = "Scheduling is blocked due to non-empty scheduling gates"
"""The API server's message for that condition (the SchedulingGates plugin's too)."""


class PodStatusPatch(Wire, kw_only=True, frozen=True, tag_field="kind", tag="PodStatusPatch"):
    """Set or clear a pending pod's ``PodScheduled`` condition, or set its
    ``extendedResourceClaimStatus`` (``status.<namespace>``)."""

    namespace: str
    name: str
    uid: str
    condition: PodCondition | None = None
    """The condition to set (replacing the pod's ``PodScheduled`` condition)."""
    cleared: PodCondition | None = None
    """On a clear (no ``condition``): the condition the pod showed, to be removed if the
    pod's ``PodScheduled`` condition still has its reason."""
    plugin: str = ""
    """The PreEnqueue plugin whose rejection ``condition`` reports (empty on a clear)."""
    scheduler_name: str = ""
    """The profile (schedulerName) that holds the pod back (or binds it)."""
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None
    """Set the pod's ``status.extendedResourceClaimStatus`` (the claim created for its
    extended resources backed by DRA, and the container request mappings)."""


__all__ = [
    "NOT_READY_FOR_SCHEDULING",
    "POD_SCHEDULED",
    "SCHEDULING_GATED",
    "SCHEDULING_GATED_MESSAGE",
    "PodStatusPatch",
]
