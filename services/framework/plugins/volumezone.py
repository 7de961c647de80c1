"""VolumeZone: a bound volume's zone and region labels must match the node's.

PreFilter collects, for every claim of the pod that is bound to a volume, the
volume's topology labels (``topology.kubernetes.io/zone`` / ``region`` and the legacy
``failure-domain.beta.kubernetes.io/*``); a value may list several zones joined by
``__``. Claims of a WaitForFirstConsumer class that are not bound yet are skipped; a
missing claim, class or volume fails the pod (UnschedulableAndUnresolvable, with the
API's NotFound text). No topology: Skip.

Filter: a node without any of the four labels passes (a single-zone cluster); any
other node must have, for every collected label, one of the volume's values, under
the same key or, for a legacy key, its GA twin; otherwise UnschedulableAndUnresolvable
"node(s) had no available volume zone".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from contracts.k8s import PersistentVolume, PersistentVolumeClaim, Pod, StorageClass
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
    WAIT_FOR_FIRST_CONSUMER,
    Unresolvable,
    binding_mode,
    claim_class,
    claim_not_found,
    class_not_found,
    volume_not_found,
)

NAME: Final = "VolumeZone"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
ERR_REASON_CONFLICT: Final = "node(s) had no available volume zone"
LABEL_FAILURE_DOMAIN_BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION: Final = "topology.kubernetes.io/region"
TOPOLOGY_LABELS: Final = (
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
)
_GA_LABEL: Final = {
    LABEL_FAILURE_DOMAIN_BETA_ZONE: LABEL_TOPOLOGY_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION: LABEL_TOPOLOGY_REGION,
}
MULTI_ZONE_DELIMITER: Final = "__"
_CONFLICT = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_CONFLICT,))


@dataclass(frozen=True, slots=True)
class PVTopology:
    volume: str
    key: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class _State:
    topologies: tuple[PVTopology, ...]

    def clone(self) -> _State:
        return self


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """``LabelZonesToSet``: the ``__``-separated zones, None if one of them is empty."""
    zones = [zone.strip() for zone in value.split(MULTI_ZONE_DELIMITER)]
    return None if any(not zone for zone in zones) else frozenset(zones)


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name: Final = NAME

    def __init__(self, listers: Listers) -> None:
        self._listers = listers

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A WaitForFirstConsumer class, a node (label), a claim getting bound, a volume's
        topology labels."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.StorageClass, ActionType.Add), _after_class_added
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.Node,
                    ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint,
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.PersistentVolumeClaim, ActionType.Add | ActionType.Update
                ),
                _after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PersistentVolume, ActionType.Add | ActionType.Update),
                _after_volume_change,
            ),
        )

    def topologies(self, pod: Pod) -> tuple[PVTopology, ...]:
        """``getPVbyPod``; raises Unresolvable when a claim, class or volume is missing."""
        namespace = pod.metadata.namespace or "default"
        found: list[PVTopology] = []
        for volume in pod.spec.volumes:
            if volume.persistent_volume_claim is None:
                continue
            claim_name = volume.persistent_volume_claim.claim_name
            if not claim_name:
                raise Unresolvable("PersistentVolumeClaim had no name")
            claim = self._listers.claim(namespace, claim_name)
            if claim is None:
                raise Unresolvable(claim_not_found(claim_name))
            pv = self._bound_volume(claim)
            if pv is None:
                continue
            for key in TOPOLOGY_LABELS:
                value = pv.metadata.labels.get(key)
                zones = label_zones_to_set(value) if value is not None else None
                if zones is not None:
                    found.append(PVTopology(pv.metadata.name, key, zones))
        return tuple(found)

    def _bound_volume(self, claim: PersistentVolumeClaim) -> PersistentVolume | None:
        pv_name = claim.spec.volume_name
        if not pv_name:
            class_name = claim_class(claim)
            if not class_name:
                raise Unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
            mode = binding_mode(self._listers, class_name)
            if mode is None:
                raise Unresolvable(class_not_found(class_name))
            if mode == WAIT_FOR_FIRST_CONSUMER:
                return None
            raise Unresolvable("PersistentVolume had no name")
        pv = self._listers.persistent_volumes.get(pv_name)
        if pv is None:
            raise Unresolvable(volume_not_found(pv_name))
        return pv

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        try:
            topologies = self.topologies(pod.pod)
        except Unresolvable as err:
            return None, err.status
        if not topologies:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _State(topologies))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        if not pod.pod.spec.volumes:
            return FilterResult.all_passed(nodes.num_nodes)
        try:
            topologies = state.read(PRE_FILTER_STATE_KEY, _State).topologies
        except StatusError:
            try:
                topologies = self.topologies(pod.pod)
            except Unresolvable as err:
                return FilterResult.uniform(np.zeros(nodes.num_nodes, np.bool_), err.status)
        attrs = nodes.attributes
        constrained = np.zeros(nodes.num_nodes, dtype=np.bool_)
        for key in TOPOLOGY_LABELS:
            constrained |= attrs.label(key).present()
        passed = np.ones(nodes.num_nodes, dtype=np.bool_)
        for topology in topologies:
            own = attrs.label(topology.key)
            ga = attrs.label(_GA_LABEL.get(topology.key, topology.key))
            values = sorted(topology.values)
            passed &= np.where(own.present(), own.matches(values), ga.matches(values))
        return FilterResult.uniform(passed | ~constrained, _CONFLICT)


def _requests_claim(pod: Pod, claim: PersistentVolumeClaim) -> bool:
    """``IsPVCRequestedFromPod``."""
    if (claim.metadata.namespace or "default") != (pod.metadata.namespace or "default"):
        return False
    return any(
        v.persistent_volume_claim is not None
        and v.persistent_volume_claim.claim_name == claim.metadata.name
        for v in pod.spec.volumes
    )


def _after_claim_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    if not isinstance(new, PersistentVolumeClaim):
        return QueueingHint.Queue
    return QueueingHint.Queue if _requests_claim(pod, new) else QueueingHint.QueueSkip


def _after_class_added(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    if not isinstance(new, StorageClass):
        return QueueingHint.Queue
    waits = new.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER
    return QueueingHint.Queue if waits else QueueingHint.QueueSkip


def _after_volume_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    if not isinstance(new, PersistentVolume) or (
        old is not None and not isinstance(old, PersistentVolume)
    ):
        return QueueingHint.Queue
    if old is None:
        return QueueingHint.Queue
    for key in TOPOLOGY_LABELS:
        if old.metadata.labels.get(key) != new.metadata.labels.get(key):
            return QueueingHint.Queue
    return QueueingHint.QueueSkip


def new(args: None, handle: Handle) -> VolumeZone:
    return VolumeZone(handle.listers)


ENTRY: Final = PluginEntry(NAME, VolumeZone, new)
