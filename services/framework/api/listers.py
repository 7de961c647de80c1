"""Cluster objects other than nodes and pods, as plugins read them (upstream's listers):
namespaces (InterPodAffinity's namespaceSelector), PersistentVolumes, claims and
StorageClasses (the volume plugins), PodDisruptionBudgets and PriorityClasses
(preemption), Services, ReplicationControllers, ReplicaSets and StatefulSets
(PodTopologySpread's default selector), PodGroups (Coscheduling), DeviceClasses,
ResourceSlices, ResourceClaims and ResourceClaimTemplates (DynamicResources), Workloads and
the native PodGroups with their members (GangScheduling). The snapshot keeps
them current from the same log entries it applies."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from contracts.events import LogEntry
from contracts.k8s import (
    DeviceClass,
    Namespace,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodGroup,
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
from contracts.kinds import KINDS as ALL_KINDS
from services.common.k8s.extendedresources import device_class_mapping

KINDS: Mapping[str, type] = {
    kind: struct for kind, struct in ALL_KINDS.items() if kind not in ("pod", "node")
}
"""The kinds the listers hold, by routing-key kind: what the scheduler loads at start."""


def _none_held(now: float) -> frozenset[str]:
    return frozenset()


_MAX_CHANGES = 1 << 16
"""Claim changes kept before the journal starts over (a new epoch)."""


def _key(namespace: str | None, name: str) -> str:
    return f"{namespace or 'default'}/{name}"


class Listers:
    def __init__(self) -> None:
        self.namespaces: dict[str, Namespace] = {}
        self.persistent_volumes: dict[str, PersistentVolume] = {}
        self.persistent_volume_claims: dict[str, PersistentVolumeClaim] = {}
        """By ``namespace/name``."""
        self.storage_classes: dict[str, StorageClass] = {}
        self.pod_disruption_budgets: dict[str, PodDisruptionBudget] = {}
        """By ``namespace/name``."""
        self.priority_classes: dict[str, PriorityClass] = {}
        self.services: dict[str, Service] = {}
        """By ``namespace/name``, as the controllers below."""
        self.replication_controllers: dict[str, ReplicationController] = {}
        self.replica_sets: dict[str, ReplicaSet] = {}
        self.stateful_sets: dict[str, StatefulSet] = {}
        self.pod_groups: dict[str, PodGroup] = {}
        """By ``namespace/name``."""
        self.device_classes: dict[str, DeviceClass] = {}
        self.resource_slices: dict[str, ResourceSlice] = {}
        """By name (cluster-scoped)."""
        self.resource_claims: dict[str, ResourceClaim] = {}
        self.resource_claim_changes: list[str] = []
        """The keys of the claims put or deleted, in order, for readers that follow
        them (DynamicResources' devices taken); starts over with a new
        :attr:`resource_claims_epoch` (after a reload, or when it grew long), when a
        reader must read every claim again."""
        self.resource_claims_epoch = 0
        self.device_generation = 0
        """Raised whenever a DeviceClass or ResourceSlice is put or deleted: readers
        that derive something from them all (DynamicResources) redo it only then."""
        """By ``namespace/name``, as the templates."""
        self.resource_claim_templates: dict[str, ResourceClaimTemplate] = {}
        self.devices_held_elsewhere: Callable[[float], frozenset[str]] = _none_held
        """DRA devices (``driver/pool/device``) others hold at a time (clock seconds) as
        far as this replica knows beyond its log (another replica's reservation that
        the store refused ours for): DynamicResources counts them as allocated. The
        scheduler's Cache sets it (``Cache.devices_held_elsewhere``); none otherwise."""
        self.workloads: dict[str, Workload] = {}
        """By ``namespace/name``, as the native PodGroups."""
        self.scheduling_pod_groups: dict[str, SchedulingPodGroup] = {}
        self.scheduling_group_members = SchedulingGroupMembers()
        """The pods of each native PodGroup; fed pods only where a PreEnqueue counts
        them (the queue), see :meth:`SchedulingGroupMembers.put`."""
        self._resolved: tuple[int, Mapping[str, DeviceClass]] = (-1, {})

    def device_class_resolver(self) -> Mapping[str, DeviceClass]:
        """``DeviceClassResolver``: extended resource name → the DeviceClass serving it
        (:mod:`services.common.k8s.extendedresources`), rebuilt only when the
        DeviceClasses changed."""
        if self._resolved[0] != self.device_generation:
            mapping = device_class_mapping(self.device_classes.values())
            self._resolved = (self.device_generation, mapping)
        return self._resolved[1]

    def scheduling_pod_group(self, namespace: str | None, name: str) -> SchedulingPodGroup | None:
        """The native (``scheduling.k8s.io``) PodGroup ``namespace/name``."""
        return self.scheduling_pod_groups.get(_key(namespace, name))

    def pod_group(self, namespace: str | None, name: str) -> PodGroup | None:
        return self.pod_groups.get(_key(namespace, name))

    def resource_claim(self, namespace: str | None, name: str) -> ResourceClaim | None:
        return self.resource_claims.get(_key(namespace, name))

    def resource_claim_template(
        self, namespace: str | None, name: str
    ) -> ResourceClaimTemplate | None:
        return self.resource_claim_templates.get(_key(namespace, name))

    def claim(self, namespace: str | None, name: str) -> PersistentVolumeClaim | None:
        return self.persistent_volume_claims.get(_key(namespace, name))

    def services_in(self, namespace: str | None) -> list[Service]:
        """``ServiceLister.Services(namespace).List(labels.Everything())``."""
        prefix = _key(namespace, "")
        return [s for key, s in self.services.items() if key.startswith(prefix)]

    def apply(self, event: LogEntry) -> None:
        """Apply one log entry (entries of kinds the listers do not hold are ignored)."""
        self.put(event.object, deleted=event.type == "DELETED")

    def put(self, obj: object, *, deleted: bool = False) -> None:
        match obj:
            case Namespace(metadata=meta):
                _put(self.namespaces, meta.name, obj, deleted)
            case PersistentVolume(metadata=meta):
                _put(self.persistent_volumes, meta.name, obj, deleted)
            case PersistentVolumeClaim(metadata=meta):
                _put(self.persistent_volume_claims, _key(meta.namespace, meta.name), obj, deleted)
            case StorageClass(metadata=meta):
                _put(self.storage_classes, meta.name, obj, deleted)
            case PodDisruptionBudget(metadata=meta):
                _put(self.pod_disruption_budgets, _key(meta.namespace, meta.name), obj, deleted)
            case PriorityClass(metadata=meta):
                _put(self.priority_classes, meta.name, obj, deleted)
            case Service(metadata=meta):
                _put(self.services, _key(meta.namespace, meta.name), obj, deleted)
            case ReplicationController(metadata=meta):
                _put(self.replication_controllers, _key(meta.namespace, meta.name), obj, deleted)
            case ReplicaSet(metadata=meta):
                _put(self.replica_sets, _key(meta.namespace, meta.name), obj, deleted)
            case StatefulSet(metadata=meta):
                _put(self.stateful_sets, _key(meta.namespace, meta.name), obj, deleted)
            case PodGroup(metadata=meta):
                _put(self.pod_groups, _key(meta.namespace, meta.name), obj, deleted)
            case DeviceClass(metadata=meta):
                _put(self.device_classes, meta.name, obj, deleted)
                self.device_generation += 1
            case ResourceSlice(metadata=meta):
                _put(self.resource_slices, meta.name, obj, deleted)
                self.device_generation += 1
            case ResourceClaim(metadata=meta):
                key = _key(meta.namespace, meta.name)
                _put(self.resource_claims, key, obj, deleted)
                if len(self.resource_claim_changes) >= _MAX_CHANGES:
                    self.resource_claim_changes = []
                    self.resource_claims_epoch += 1
                self.resource_claim_changes.append(key)
            case ResourceClaimTemplate(metadata=meta):
                _put(self.resource_claim_templates, _key(meta.namespace, meta.name), obj, deleted)
            case Workload(metadata=meta):
                _put(self.workloads, _key(meta.namespace, meta.name), obj, deleted)
            case SchedulingPodGroup(metadata=meta):
                _put(self.scheduling_pod_groups, _key(meta.namespace, meta.name), obj, deleted)
            case _:
                pass

    def load(self, objects: Mapping[str, Mapping[str, bytes]]) -> None:
        """Replace everything with the store's objects: kind → key → JSON."""
        for table in self._tables():
            table.clear()
        self.resource_claim_changes = []
        self.resource_claims_epoch += 1
        self.device_generation += 1
        for kind, items in objects.items():
            cls = KINDS.get(kind)
            if cls is not None:
                decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(cls)
                for body in items.values():
                    self.put(decoder.decode(body))

    def _tables(self) -> tuple[dict[str, Any], ...]:
        return (
            self.namespaces,
            self.persistent_volumes,
            self.persistent_volume_claims,
            self.storage_classes,
            self.pod_disruption_budgets,
            self.priority_classes,
            self.services,
            self.replication_controllers,
            self.replica_sets,
            self.stateful_sets,
            self.pod_groups,
            self.device_classes,
            self.resource_slices,
            self.resource_claims,
            self.resource_claim_templates,
            self.workloads,
            self.scheduling_pod_groups,
        )


def _put(into: dict[str, Any], key: str, obj: object, deleted: bool) -> None:
    if deleted:
        into.pop(key, None)
    else:
        into[key] = obj


class SchedulingGroupMembers:
    """The pods of each native PodGroup by ``spec.schedulingGroup`` (any phase, pending or
    bound): upstream's ``PodGroupState.AllPods``, what GangScheduling's PreEnqueue counts."""

    def __init__(self) -> None:
        self._members: dict[str, set[str]] = {}
        self._group_of: dict[str, str] = {}

    def load(self, pods: Iterable[Pod]) -> None:
        self._members, self._group_of = {}, {}
        for pod in pods:
            self.put(pod)

    def put(self, pod: Pod, *, deleted: bool = False) -> None:
        uid = pod.metadata.uid
        old = self._group_of.pop(uid, None)
        if old is not None:
            self._members[old].discard(uid)
            if not self._members[old]:
                del self._members[old]
        group = pod.spec.scheduling_group
        if deleted or group is None or not group.pod_group_name:
            return
        key = _key(pod.metadata.namespace, group.pod_group_name)
        self._group_of[uid] = key
        self._members.setdefault(key, set()).add(uid)

    def has(self, uid: str) -> bool:
        return uid in self._group_of

    def count(self, namespace: str | None, name: str) -> int:
        return len(self._members.get(_key(namespace, name), ()))
