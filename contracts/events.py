"""Watch events in and the sequenced cluster events the informer republishes.

Inbound (``ksched.events``, routing key ``<kind>.<type>``): exactly a Kubernetes watch
event, ``{"type": "ADDED"|"MODIFIED"|"DELETED", "object": {...}}``. The object is kept
raw here and decoded by the informer against the kind named in the routing key, so a
malformed object can be reported field by field.

Internal (``ksched.cluster``): :class:`ClusterBatch`, the informer's log entries in
sequence order. Every projection (Redis, each scheduler's snapshot, the queue) applies
them in ``seq`` order and ignores a ``seq`` it has already applied.
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from contracts.k8s import (
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
    Wire,
    Workload,
)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Origin = Literal["user", "binding", "controller"]


class WatchEvent(msgspec.Struct, kw_only=True, frozen=True):
    """A Kubernetes watch event as a user publishes it."""

    type: EventType
    object: msgspec.Raw


class _LogEntryBase(Wire, kw_only=True, frozen=True, tag_field="kind"):
    seq: int
    """Position in the event log: strictly increasing, gap-free, assigned by the informer."""
    type: EventType
    at: float = 0.0
    """Wall-clock seconds when the informer accepted the event (for latency metrics)."""
    trace: dict[str, str] = {}
    """W3C trace context of the ingest span, so downstream spans join the same trace."""
    origin: Origin = "user"
    """``user``: a watch event someone published. ``binding``: the informer recorded a
    Binding the binder published (the pod got its spec.nodeName). ``controller``: ksched
    wrote it as kube-controller-manager's resourceclaim controller would (a claim
    generated from a template, the pod's ``status.resourceClaimStatuses``, a claim
    released, deallocated or deleted when its pod ended). Replay feeds the user and
    controller entries back and compares its decisions with the binding entries."""


class PodEntry(_LogEntryBase, kw_only=True, frozen=True, tag="pod"):
    object: Pod


class NodeEntry(_LogEntryBase, kw_only=True, frozen=True, tag="node"):
    object: Node


class NamespaceEntry(_LogEntryBase, kw_only=True, frozen=True, tag="namespace"):
    object: Namespace


class PriorityClassEntry(_LogEntryBase, kw_only=True, frozen=True, tag="priorityclass"):
    object: PriorityClass


class PodDisruptionBudgetEntry(_LogEntryBase, kw_only=True, frozen=True, tag="poddisruptionbudget"):
    object: PodDisruptionBudget


class PersistentVolumeEntry(_LogEntryBase, kw_only=True, frozen=True, tag="persistentvolume"):
    object: PersistentVolume


class PersistentVolumeClaimEntry(
    _LogEntryBase, kw_only=True, frozen=True, tag="persistentvolumeclaim"
):
    object: PersistentVolumeClaim


class StorageClassEntry(_LogEntryBase, kw_only=True, frozen=True, tag="storageclass"):
    object: StorageClass


class ServiceEntry(_LogEntryBase, kw_only=True, frozen=True, tag="service"):
    object: Service


class ReplicationControllerEntry(
    _LogEntryBase, kw_only=True, frozen=True, tag="replicationcontroller"
):
    object: ReplicationController


class ReplicaSetEntry(_LogEntryBase, kw_only=True, frozen=True, tag="replicaset"):
    object: ReplicaSet


class StatefulSetEntry(_LogEntryBase, kw_only=True, frozen=True, tag="statefulset"):
    object: StatefulSet


class PodGroupEntry(_LogEntryBase, kw_only=True, frozen=True, tag="podgroup"):
    object: PodGroup


class WorkloadEntry(_LogEntryBase, kw_only=True, frozen=True, tag="workload"):
    object: Workload


class SchedulingPodGroupEntry(_LogEntryBase, kw_only=True, frozen=True, tag="schedulingpodgroup"):
    object: SchedulingPodGroup


class NodeMetricsEntry(_LogEntryBase, kw_only=True, frozen=True, tag="nodemetrics"):
    object: NodeMetrics


class PodMetricsEntry(_LogEntryBase, kw_only=True, frozen=True, tag="podmetrics"):
    object: PodMetrics


class DeviceClassEntry(_LogEntryBase, kw_only=True, frozen=True, tag="deviceclass"):
    object: DeviceClass


class ResourceSliceEntry(_LogEntryBase, kw_only=True, frozen=True, tag="resourceslice"):
    object: ResourceSlice


class ResourceClaimEntry(_LogEntryBase, kw_only=True, frozen=True, tag="resourceclaim"):
    object: ResourceClaim


class ResourceClaimTemplateEntry(
    _LogEntryBase, kw_only=True, frozen=True, tag="resourceclaimtemplate"
):
    object: ResourceClaimTemplate


LogEntry = (
    PodEntry
    | NodeEntry
    | NamespaceEntry
    | PriorityClassEntry
    | PodDisruptionBudgetEntry
    | PersistentVolumeEntry
    | PersistentVolumeClaimEntry
    | StorageClassEntry
    | ServiceEntry
    | ReplicationControllerEntry
    | ReplicaSetEntry
    | StatefulSetEntry
    | PodGroupEntry
    | NodeMetricsEntry
    | PodMetricsEntry
    | DeviceClassEntry
    | ResourceSliceEntry
    | ResourceClaimEntry
    | ResourceClaimTemplateEntry
    | WorkloadEntry
    | SchedulingPodGroupEntry
)

ENTRY_FOR_KIND: dict[str, type[LogEntry]] = {
    str(entry.__struct_config__.tag): entry for entry in get_args(LogEntry)
}
"""Routing-key kind → log entry type, read off the union's tags."""


class ClusterBatch(Wire, kw_only=True, frozen=True, tag_field="kind", tag="ClusterBatch"):
    """Consecutive log entries, published on ``ksched.cluster`` as one message."""

    events: list[LogEntry]
