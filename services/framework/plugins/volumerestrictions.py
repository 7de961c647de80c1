"""VolumeRestrictions: volumes that two pods cannot share.

Filter, per node, rejects (Unschedulable, "node(s) had no available disk") a pod
whose volume conflicts with one of a pod already on the node:

- GCE PD: the same ``pdName``, unless both mount it read-only;
- AWS EBS: the same ``volumeID``;
- ISCSI: the same ``iqn``, unless both are read-only;
- RBD: a shared Ceph monitor, the same pool and image, unless both are read-only.

Then, on every node alike, it rejects (Unschedulable) a pod using a
``ReadWriteOncePod`` claim that a scheduled pod already uses. PreFilter counts those
uses once (preemption's AddPod/RemovePod adjust the count) and fails with
UnschedulableAndUnresolvable if a claim of the pod does not exist; it skips the
Filter when there is nothing to check.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from contracts.k8s import PersistentVolumeClaim, Pod, Volume
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from services.framework.api.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from services.framework.api.listers import Listers
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SKIP, SUCCESS, Code, Status
from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.volumehelpers.claims import READ_WRITE_ONCE_POD, claim_not_found

NAME: Final = "VolumeRestrictions"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT: Final = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: Final = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
_DISK_CONFLICT = Status(Code.Unschedulable, (ERR_REASON_DISK_CONFLICT,))
_RWOP_CONFLICT = Status(Code.Unschedulable, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,))
_DEFAULT_RBD_POOL: Final = "rbd"
"""The API server's default for ``rbd.pool``."""


@dataclass(slots=True)
class _PreFilterState:
    read_write_once_pod_claims: frozenset[str]
    """Names of the pod's claims with the ReadWriteOncePod access mode."""
    conflicting_claim_refs: int
    """How many times scheduled pods use those claims."""

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.read_write_once_pod_claims, self.conflicting_claim_refs)

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        refs = sum(
            1
            for v in pod.spec.volumes
            if v.persistent_volume_claim is not None
            and v.persistent_volume_claim.claim_name in self.read_write_once_pod_claims
        )
        self.conflicting_claim_refs += multiplier * refs


def _both_read_only(source: dict[str, Any], other: dict[str, Any]) -> bool:
    return bool(source.get("readOnly", False)) and bool(other.get("readOnly", False))


def _same_disk_written(
    source: dict[str, Any] | None, other: dict[str, Any] | None, key: str
) -> bool:
    """Both volumes name one disk (the same ``key``) and not both only read it."""
    return (
        source is not None
        and other is not None
        and source.get(key) == other.get(key)
        and not _both_read_only(source, other)
    )


def _rbd_key(rbd: dict[str, Any]) -> tuple[frozenset[str], str, str]:
    monitors = frozenset(str(m) for m in rbd.get("monitors") or ())
    return monitors, str(rbd.get("pool") or _DEFAULT_RBD_POOL), str(rbd.get("image", ""))


def is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """``isVolumeConflict``: does ``volume`` conflict with one of ``pod``'s volumes?"""
    for existing in pod.spec.volumes:
        if _same_disk_written(volume.gce_persistent_disk, existing.gce_persistent_disk, "pdName"):
            return True
        ebs, other = volume.aws_elastic_block_store, existing.aws_elastic_block_store
        if ebs is not None and other is not None and ebs.get("volumeID") == other.get("volumeID"):
            return True
        if _same_disk_written(volume.iscsi, existing.iscsi, "iqn"):
            return True
        rbd, other = volume.rbd, existing.rbd
        if rbd is not None and other is not None:
            monitors, pool, image = _rbd_key(rbd)
            other_monitors, other_pool, other_image = _rbd_key(other)
            if (
                monitors & other_monitors
                and (pool, image) == (other_pool, other_image)
                and not _both_read_only(rbd, other)
            ):
                return True
    return False


def needs_restrictions_check(volume: Volume) -> bool:
    return (
        volume.gce_persistent_disk is not None
        or volume.aws_elastic_block_store is not None
        or volume.rbd is not None
        or volume.iscsi is not None
    )


def satisfies_volume_conflicts(volumes: Sequence[Volume], pods: Iterable[Pod]) -> bool:
    """``satisfyVolumeConflicts`` for the pod's restricted ``volumes``."""
    return not any(is_volume_conflict(v, p) for p in pods for v in volumes)


def _claims_used(pod: Pod) -> Iterable[str]:
    namespace = pod.metadata.namespace or "default"
    for volume in pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            yield f"{namespace}/{volume.persistent_volume_claim.claim_name}"


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name: Final = NAME

    def __init__(self, listers: Listers) -> None:
        self._listers = listers

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A pod using a conflicting volume going away; a new node; the missing claim."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.Pod, ActionType.Delete), self._after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PersistentVolumeClaim, ActionType.Add),
                _after_claim_added,
            ),
        )

    def _after_pod_deleted(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """``isSchedulableAfterPodDeleted``."""
        if not isinstance(old, Pod):
            return QueueingHint.Queue
        if (old.metadata.namespace or "default") != (pod.metadata.namespace or "default"):
            return QueueingHint.QueueSkip
        restricted = [v for v in pod.spec.volumes if needs_restrictions_check(v)]
        if not satisfies_volume_conflicts(restricted, (old,)):
            return QueueingHint.Queue
        if set(_claims_used(old)) & set(_claims_used(pod)):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    # -- PreFilter --------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        spec = pod.pod.spec
        needs_check = any(needs_restrictions_check(v) for v in spec.volumes)
        namespace = pod.pod.metadata.namespace or "default"
        rwop: set[str] = set()
        for volume in spec.volumes:
            if volume.persistent_volume_claim is None:
                continue
            name = volume.persistent_volume_claim.claim_name
            claim = self._listers.claim(namespace, name)
            if claim is None:
                return None, Status(Code.UnschedulableAndUnresolvable, (claim_not_found(name),))
            if READ_WRITE_ONCE_POD in claim.spec.access_modes:
                rwop.add(claim.metadata.name)
        conflicts = _count_claim_users(nodes, {f"{namespace}/{c}" for c in rwop})
        if not needs_check and conflicts == 0:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(frozenset(rwop), conflicts))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: str) -> Status:
        state.read(PRE_FILTER_STATE_KEY, _PreFilterState).update_with_pod(to_add.pod, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: str) -> Status:
        state.read(PRE_FILTER_STATE_KEY, _PreFilterState).update_with_pod(to_remove.pod, -1)
        return SUCCESS

    # -- Filter -----------------------------------------------------------------

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        restricted = [v for v in pod.pod.spec.volumes if needs_restrictions_check(v)]
        passed = np.ones(nodes.num_nodes, dtype=np.bool_)
        if restricted:
            for row, on_node in enumerate(nodes.pods):
                existing = (info.pod for info in on_node.values())
                passed[row] = satisfies_volume_conflicts(restricted, existing)
        codes = (~passed).astype(np.int64)
        prefilter = state.read(PRE_FILTER_STATE_KEY, _PreFilterState)
        if prefilter.conflicting_claim_refs > 0:
            codes[passed] = 2
            passed[:] = False
        return FilterResult(passed, codes, _describe)


def _describe(code: int) -> Status:
    return _DISK_CONFLICT if code == 1 else _RWOP_CONFLICT


def _count_claim_users(nodes: Snapshot, claims: set[str]) -> int:
    """``IsPVCUsedByPods`` summed over ``claims`` (``namespace/name``): each claim used
    by some scheduled pod counts once."""
    if not claims:
        return 0
    used: set[str] = set()
    for on_node in nodes.pods:
        for info in on_node.values():
            used.update(c for c in _claims_used(info.pod) if c in claims)
    return len(used)


def _after_claim_added(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimAdded``."""
    if not isinstance(new, PersistentVolumeClaim):
        return QueueingHint.Queue
    if (new.metadata.namespace or "default") != (pod.metadata.namespace or "default"):
        return QueueingHint.QueueSkip
    for volume in pod.spec.volumes:
        claim = volume.persistent_volume_claim
        if claim is not None and claim.claim_name == new.metadata.name:
            return QueueingHint.Queue
    return QueueingHint.QueueSkip


def new(args: None, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions(handle.listers)


ENTRY: Final = PluginEntry(NAME, VolumeRestrictions, new)
