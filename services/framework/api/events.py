"""The cluster events a plugin registers (``EnqueueExtensions.EventsToRegister``).

A plugin that rejected a pod names the events that could make the pod schedulable
again; the queue moves the pod out of unschedulablePods only on such an event (and,
with a queueing hint, only when the hint says ``Queue``). These are upstream's
``framework.ClusterEvent`` values, not the sequenced log entries of
:mod:`contracts.events`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from contracts.k8s import Pod


class EventResource(enum.StrEnum):
    """``framework.EventResource``."""

    Pod = "Pod"
    AssignedPod = "AssignedPod"
    UnschedulablePod = "UnschedulablePod"
    Node = "Node"
    PersistentVolume = "PersistentVolume"
    PersistentVolumeClaim = "PersistentVolumeClaim"
    CSINode = "storage.k8s.io/CSINode"
    CSIDriver = "storage.k8s.io/CSIDriver"
    VolumeAttachment = "storage.k8s.io/VolumeAttachment"
    CSIStorageCapacity = "storage.k8s.io/CSIStorageCapacity"
    StorageClass = "storage.k8s.io/StorageClass"
    ResourceClaim = "resource.k8s.io/ResourceClaim"
    ResourceSlice = "resource.k8s.io/ResourceSlice"
    DeviceClass = "resource.k8s.io/DeviceClass"
    PodGroup = "podgroups.v1alpha1.scheduling.x-k8s.io"
    """scheduler-plugins' PodGroup (Coscheduling registers it as a GVK resource)."""
    SchedulingPodGroup = "PodGroup"
    """The native ``scheduling.k8s.io`` PodGroup (upstream's ``fwk.PodGroup``)."""
    Workload = "Workload"
    WildCard = "*"


class ActionType(enum.IntFlag):
    """``framework.ActionType``: what happened to the resource (bit flags)."""

    Add = 1 << 0
    Delete = 1 << 1
    UpdateNodeAllocatable = 1 << 2
    UpdateNodeLabel = 1 << 3
    UpdateNodeTaint = 1 << 4
    UpdateNodeCondition = 1 << 5
    UpdateNodeAnnotation = 1 << 6
    UpdatePodLabel = 1 << 7
    UpdatePodScaleDown = 1 << 8
    UpdatePodToleration = 1 << 9
    UpdatePodSchedulingGatesEliminated = 1 << 10
    UpdatePodGeneratedResourceClaim = 1 << 11
    UpdateOther = 1 << 12
    """Any update not covered by a specific flag (upstream's unexported updateOther)."""
    Update = (
        UpdateNodeAllocatable
        | UpdateNodeLabel
        | UpdateNodeTaint
        | UpdateNodeCondition
        | UpdateNodeAnnotation
        | UpdatePodLabel
        | UpdatePodScaleDown
        | UpdatePodToleration
        | UpdatePodSchedulingGatesEliminated
        | UpdatePodGeneratedResourceClaim
        | UpdateOther
    )
    All = Add | Delete | Update


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of change: ``ClusterEvent{Resource, ActionType}`` upstream."""

    resource: EventResource
    action_type: ActionType
    custom_label: str = ""

    @property
    def label(self) -> str:
        """``NodeAdd``, ``PodDelete``…: the label upstream uses in metrics."""
        return self.custom_label or f"{self.resource}{self.action_type.name or ''}"

    def is_wildcard(self) -> bool:
        """``ClusterEventIsWildCard``: every resource, every action."""
        return self.resource == EventResource.WildCard and self.action_type == ActionType.All

    def matches(self, incoming: ClusterEvent) -> bool:
        """``MatchClusterEvents``: this registered event covers ``incoming`` if it is the
        same event or a more specific one. A generic ``Update`` only matches a
        registration of every update (``incoming <= registered``); ``Pod`` covers
        assigned and unschedulable pods; an incoming wildcard matches only the wildcard
        registration."""
        if self.is_wildcard():
            return True
        resource = self.resource
        same = (
            resource == EventResource.WildCard
            or resource == incoming.resource
            or (
                resource == EventResource.Pod
                and incoming.resource in (EventResource.AssignedPod, EventResource.UnschedulablePod)
            )
        )
        action, wanted = incoming.action_type, self.action_type
        return same and bool(wanted & action) and int(action) <= int(wanted)


class QueueingHint(enum.IntEnum):
    """``framework.QueueingHint``."""

    QueueSkip = 0
    Queue = 1


QueueingHintFn = Callable[[Pod, object | None, object | None], QueueingHint]
"""``(pod, old object, new object) -> hint``; raising means ``Queue``."""


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event and, optionally, the hint that filters it further."""

    event: ClusterEvent
    queueing_hint: QueueingHintFn | None = None
