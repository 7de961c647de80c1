"""A pod's scheduling condition, published by the queue (``ksched.decisions``, routing key
``status.<namespace>``): KEP-5501, why a pod is pending when PreEnqueue holds it back.

A :class:`PodStatusPatch` is the status update kube-scheduler would make on the pod
(``pods/status``), for a client to apply:

- ``condition`` set: the pod's ``PodScheduled`` condition becomes this one (status
  ``False``, reason ``NotReadyForScheduling``, the PreEnqueue plugin's message) — a
  strategic merge patch of ``status.conditions``, whose merge key is ``type``.
- ``condition`` absent, ``cleared`` set (a clear): the pod passes PreEnqueue again, so
  remove its ``PodScheduled`` condition if it still has ``cleared``'s reason (a newer
  condition set by someone else stays).

The queue publishes a patch only after the pod stayed in that state for 5 seconds, and
never one the pod's condition already says.
"""

from __future__ import annotations

from typing import Final

from contracts.k8s.base import Wire
from contracts.k8s.pod import PodCondition

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
    """Set or clear a pending pod's ``PodScheduled`` condition (``status.<namespace>``)."""

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
    """The profile (schedulerName) that holds the pod back."""


__all__ = [
    "NOT_READY_FOR_SCHEDULING",
    "POD_SCHEDULED",
    "SCHEDULING_GATED",
    "SCHEDULING_GATED_MESSAGE",
    "PodStatusPatch",
]
