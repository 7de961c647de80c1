"""What a preemption says to the world, shared by DefaultPreemption (which decides)
and the scheduling cycle (which publishes): upstream's words for the victims."""

from __future__ import annotations

from typing import Final

PREEMPTED_REASON: Final = "Preempted"
"""The Event reason on each victim; its note is :func:`preempted_message`."""
PREEMPTING_ACTION: Final = "Preempting"
DISRUPTION_TARGET: Final = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
"""``v1.PodReasonPreemptionByScheduler``: the DisruptionTarget condition's reason."""


def preempted_message(preemptor_uid: str, node: str) -> str:
    """The ``Preempted`` Event's note on a victim."""
    return f"Preempted by pod {preemptor_uid} on node {node}"


def disruption_message(scheduler_name: str) -> str:
    """The DisruptionTarget condition's message on a victim."""
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"
