"""SchedulingGates: keep a pod out of activeQ while it has ``spec.schedulingGates``.

PreEnqueue only. A gated pod is parked with UnschedulableAndUnresolvable and the
message ``waiting for scheduling gates: [a b]`` (Go's ``%v`` of the gate names); the
update that removes its last gate brings it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from contracts.k8s import Pod
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
        gates = [gate.name for gate in pod.pod.spec.scheduling_gates]
        if not gates:
            return SUCCESS
        message = f"waiting for scheduling gates: [{' '.join(gates)}]"
        return Status(Code.UnschedulableAndUnresolvable, (message,))

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
