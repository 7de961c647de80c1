"""The object kinds ksched ingests, keyed by the lower-case name used in routing keys."""

from __future__ import annotations

from typing import Final, get_args

from contracts.k8s import (
    Binding,
    DeviceClass,
    Namespace,
    Node,
    NodeMetrics,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PodMetrics,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    SchedulingPodGroup,
    Service,
    StatefulSet,
    StorageClass,
    Workload,
)

KubeObject = (
    Pod
    | Node
    | NodeMetrics
    | PodMetrics
    | Namespace
    | PriorityClass
    | PodDisruptionBudget
    | PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | Service
    | ReplicationController
    | ReplicaSet
    | StatefulSet
    | PodGroup
    | DeviceClass
    | ResourceSlice
    | ResourceClaim
    | ResourceClaimTemplate
    | Workload
    | SchedulingPodGroup
)

KINDS: Final[dict[str, type[KubeObject]]] = {
    kind.__name__.lower(): kind for kind in get_args(KubeObject)
}
"""Routing-key kind → struct. ``binding`` is accepted too: see BINDING_KIND."""

BINDING_KIND: Final = "binding"
BINDING_TYPE: Final = Binding

NAMESPACED: Final = frozenset(
    {
        "pod",
        "poddisruptionbudget",
        "persistentvolumeclaim",
        "binding",
        "service",
        "replicationcontroller",
        "replicaset",
        "statefulset",
        "podgroup",
        "podmetrics",
        "resourceclaim",
        "resourceclaimtemplate",
        "workload",
        "schedulingpodgroup",
    }
)

EVENT_TYPES: Final = ("ADDED", "MODIFIED", "DELETED")


def kind_of(obj: KubeObject) -> str:
    """The routing-key kind of a decoded object (``Pod`` → ``pod``)."""
    return type(obj).__name__.lower()
