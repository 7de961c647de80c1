"""NodeVolumeLimits: a node attaches at most so many volumes of each CSI driver.

Each claim of the pod (and of every pod on the node) is a CSI volume
``<driver>/<volumeHandle>``: from its bound PersistentVolume's ``spec.csi``, or, while
unbound (or bound to a volume not known yet), from its StorageClass's provisioner with a
handle unique to the claim. A volume several pods share counts once. Filter rejects a
node (Unschedulable, "node(s) exceed max volume count") where, for some driver, the
volumes attached plus the pod's new ones exceed the node's limit.

Where the limit comes from (a documented difference): upstream reads it from the
node's CSINode object (``spec.drivers[].allocatable.count``) and also counts
VolumeAttachments; ksched ingests neither kind, so it reads the limit from the node's
``status.allocatable["attachable-volumes-csi-<driver>"]``, the key upstream's older
releases read (``GetCSIAttachLimitKey``: long driver names are cut and hashed). A node
without that key has no limit for the driver. In-tree volumes are never translated to
CSI (that needs CSINode's migrated-plugins annotation), so they are not counted, as
upstream does for a node without CSINode.

A claim the pod needs that does not exist fails every node with
UnschedulableAndUnresolvable.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Final

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
from services.framework.api.status import SKIP, SUCCESS, Code, Status, StatusError
from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.volumehelpers.claims import (
    Unresolvable,
    claim_class,
    claim_not_found,
    pod_claim_name,
    volume_is_for_pod,
)

NAME: Final = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: Final = "node(s) exceed max volume count"
CSI_ATTACH_LIMIT_PREFIX: Final = "attachable-volumes-csi-"
RESOURCE_NAME_LENGTH_LIMIT: Final = 63
MIGRATABLE_IN_TREE_PROVISIONERS: Final = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/azure-file",
        "kubernetes.io/cinder",
        "kubernetes.io/vsphere-volume",
        "kubernetes.io/portworx-volume",
    }
)
"""In-tree provisioners with a CSI migration: their volumes count only once CSINode
says the node migrated them, which ksched cannot know."""
_EXCEEDED = Status(Code.Unschedulable, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,))


def csi_attach_limit_key(driver: str) -> str:
    """``GetCSIAttachLimitKey``: the allocatable key holding a driver's limit."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        digest = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver


def is_inline_migratable(volume: Volume) -> bool:
    """In-tree inline volumes that a CSI migration could take over."""
    return (
        volume.gce_persistent_disk is not None
        or volume.aws_elastic_block_store is not None
        or volume.azure_disk is not None
    )


class CSILimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    """Upstream's ``CSILimits``, registered as NodeVolumeLimits."""

    name: Final = NAME

    def __init__(self, listers: Listers) -> None:
        self._listers = listers
        self._random_prefix = uuid.uuid4().hex
        """Makes the handle of an unbound claim unique (``randomVolumeIDPrefix``)."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A new CSINode upstream; here a new node or a changed allocatable (where the
        limits live); a pod with volumes leaving its node; the missing claim."""
        return (
            ClusterEventWithHint(ClusterEvent(EventResource.CSINode, ActionType.Add)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeAllocatable)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.Pod, ActionType.Delete), _after_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PersistentVolumeClaim, ActionType.Add),
                _after_claim_added,
            ),
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        for volume in pod.pod.spec.volumes:
            if pod_claim_name(pod.pod, volume) is not None or is_inline_migratable(volume):
                return None, SUCCESS
        return None, SKIP

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        n = nodes.num_nodes
        if not pod.pod.spec.volumes:
            return FilterResult.all_passed(n)
        try:
            new_volumes = self.attachable_volumes(pod.pod, new_pod=True)
        except Unresolvable as err:
            return FilterResult.uniform(np.zeros(n, np.bool_), err.status)
        if not new_volumes:
            return FilterResult.all_passed(n)
        limits = {key: _limit_column(nodes, key) for key in set(new_volumes.values())}
        limited = np.zeros(n, dtype=np.bool_)
        for present, _ in limits.values():
            limited |= present
        passed = np.ones(n, dtype=np.bool_)
        for row in np.flatnonzero(limited).tolist():
            attached: dict[str, str] = {}
            for info in nodes.pods[row].values():
                attached.update(self.attachable_volumes(info.pod, new_pod=False))
            attached_count = Counter(attached.values())
            new_count = Counter(key for u, key in new_volumes.items() if u not in attached)
            for key, count in new_count.items():
                present, limit = limits[key]
                if present[row] and attached_count[key] + count > limit[row]:
                    passed[row] = False
                    break
        return FilterResult.uniform(passed, _EXCEEDED)

    def attachable_volumes(self, pod: Pod, *, new_pod: bool) -> dict[str, str]:
        """``filterAttachableVolumes``: unique volume name → its limit key. For the pod
        being scheduled a missing claim raises Unresolvable; other pods' unknown
        claims are not counted."""
        result: dict[str, str] = {}
        namespace = pod.metadata.namespace or "default"
        for volume in pod.spec.volumes:
            named = pod_claim_name(pod, volume)
            if named is None:
                continue  # inline volumes count only once migrated (see the module doc)
            claim_name, ephemeral = named
            if not claim_name:
                raise StatusError("PersistentVolumeClaim had no name")
            claim = self._listers.claim(namespace, claim_name)
            if claim is None:
                if new_pod:
                    raise Unresolvable(
                        f"looking up PVC {namespace}/{claim_name}: {claim_not_found(claim_name)}"
                    )
                continue
            if ephemeral:
                problem = volume_is_for_pod(pod, claim)
                if problem is not None:
                    raise StatusError(problem)
            driver, handle = self._driver_info(claim)
            if driver and handle:
                result[f"{driver}/{handle}"] = csi_attach_limit_key(driver)
        return result

    def _driver_info(self, claim: PersistentVolumeClaim) -> tuple[str, str]:
        """``getCSIDriverInfo``: (driver, volume handle), empty when not a CSI volume."""
        pv_name = claim.spec.volume_name
        pv = self._listers.persistent_volumes.get(pv_name) if pv_name else None
        if pv is None:
            return self._driver_info_from_class(claim)
        csi = pv.spec.csi
        if csi is None:
            return "", ""
        return str(csi.get("driver", "")), str(csi.get("volumeHandle", ""))

    def _driver_info_from_class(self, claim: PersistentVolumeClaim) -> tuple[str, str]:
        class_name = claim_class(claim)
        storage_class = self._listers.storage_classes.get(class_name) if class_name else None
        if storage_class is None:
            return "", ""
        provisioner = storage_class.provisioner
        if provisioner in MIGRATABLE_IN_TREE_PROVISIONERS:
            return "", ""
        namespace = claim.metadata.namespace or "default"
        return provisioner, f"{self._random_prefix}-{namespace}/{claim.metadata.name}"


def _limit_column(nodes: Snapshot, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(node has the key in its allocatable, the limit) per row."""
    present = np.fromiter(
        (key in node.status.allocatable for node in nodes.nodes), np.bool_, nodes.num_nodes
    )
    col = nodes.resources.get(key)
    limit = nodes.allocatable[:, col] if col is not None else np.zeros(nodes.num_nodes, np.int64)
    return present, limit


def _after_pod_deleted(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: a scheduled pod with attachable volumes left."""
    if not isinstance(old, Pod):
        return QueueingHint.Queue
    if not old.spec.volumes or not old.spec.node_name:
        return QueueingHint.QueueSkip
    for volume in old.spec.volumes:
        if pod_claim_name(old, volume) is not None or is_inline_migratable(volume):
            return QueueingHint.Queue
    return QueueingHint.QueueSkip


def _after_claim_added(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterPVCAdded``: the pod's own claim appeared."""
    if not isinstance(new, PersistentVolumeClaim):
        return QueueingHint.Queue
    if (new.metadata.namespace or "default") != (pod.metadata.namespace or "default"):
        return QueueingHint.QueueSkip
    for volume in pod.spec.volumes:
        named = pod_claim_name(pod, volume)
        if named is not None and named[0] == new.metadata.name:
            return QueueingHint.Queue
    return QueueingHint.QueueSkip


def new(args: None, handle: Handle) -> CSILimits:
    return CSILimits(handle.listers)


ENTRY: Final = PluginEntry(NAME, CSILimits, new)
