"""SchedulingGates: keep a pod out of activeQ while it has ``spec.schedulingGates``.

PreEnqueue only. A gated pod is parked with UnschedulableAndUnresolvable and the API
server's message for a gated pod, ``Scheduling is blocked due to non-empty scheduling
gates`` (KEP-5501 unified it, so the pod's SchedulingGated condition is never patched:
see services.queue.pod_status); the update that removes its last gate brings it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from contracts.k8s import Pod
from contracts.podstatus import SCHEDULING_GATED_MESSAGE
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from services.framework.api.interface import EnqueueExtensions, Handle, PreEnqueuePlugin
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo

NAME: Final = "SchedulingGates"


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name: Final = NAME

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.pod.spec.scheduling_gates:
            return SUCCESS
        return Status(Code.UnschedulableAndUnresolvable, (SCHEDULING_GATED_MESSAGE,))

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """The pod's own update that removes its gates."""
        event = ClusterEvent(EventResource.Pod, ActionType.UpdatePodSchedulingGatesEliminated)
        return (ClusterEventWithHint(event, after_gates_eliminated),)


def after_gates_eliminated(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterUpdateTargetPodSchedulingGatesEliminated``: only the gated
    pod's own update matters."""
    if not isinstance(new, Pod):
        return QueueingHint.Queue
    same = new.metadata.uid == pod.metadata.uid
    return QueueingHint.Queue if same else QueueingHint.QueueSkip


def new(args: None, handle: Handle) -> SchedulingGates:
    return SchedulingGates()


ENTRY: Final = PluginEntry(NAME, SchedulingGates, new)
