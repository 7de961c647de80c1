"""``FindPodVolumes`` over every node at once.

For each node, as upstream decides it node by node:

1. Bound claims, in order: the first whose volume is missing ends the check ("node(s)
   unavailable due to one or more pvc(s) bound to non-existent pv(s)"); the first whose
   volume's node affinity rejects the node ends it too ("node(s) had volume node
   affinity conflict").
2. Delay-binding claims with a selected node (a provisioning already under way): any
   other node fails at once ("node(s) didn't find available persistent volumes to
   bind").
3. The other delay-binding claims, smallest request first: each takes the smallest
   available volume of its class that fits (capacity, volume mode, access modes,
   selector, node affinity), not taken by an earlier claim on that node; a volume
   pre-bound to the claim decides alone. A claim left without a volume must be
   provisioned.
4. Claims to provision: the class needs a provisioner and its ``allowedTopologies``
   must admit the node; otherwise the node fails ("didn't find available persistent
   volumes to bind"). Storage capacity is not tracked (no CSIStorageCapacity in ksched).

The outcome keeps, per node, which volume each claim took, so Reserve can rebuild the
node's ``PodVolumes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from contracts.k8s import PersistentVolume, PersistentVolumeClaim
from services.common.k8s.labels import matches_label_selector
from services.framework.api.listers import Listers
from services.framework.api.status import StatusError
from services.framework.cache.attributes import BoolArray, NodeAttributes
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.volumebinding.assume_cache import AssumeCache
from services.framework.plugins.volumebinding.claims import PodVolumeClaims
from services.framework.plugins.volumehelpers.claims import (
    ANN_SELECTED_NODE,
    FILESYSTEM,
    NOT_SUPPORTED_PROVISIONER,
    VOLUME_AVAILABLE,
    claim_class,
    claim_request,
    volume_capacity,
    volume_class,
    volume_phase,
)
from services.framework.plugins.volumehelpers.nodeselector import node_selector_mask, topology_mask

ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST: Final = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
NODE_CONFLICT, BIND_CONFLICT, NOT_ENOUGH_SPACE, PV_NOT_EXIST = 1, 2, 4, 8
"""Reason bits of a node's code, in upstream's reason order."""
REASONS: Final = (
    (NODE_CONFLICT, ERR_REASON_NODE_CONFLICT),
    (BIND_CONFLICT, ERR_REASON_BIND_CONFLICT),
    (NOT_ENOUGH_SPACE, ERR_REASON_NOT_ENOUGH_SPACE),
    (PV_NOT_EXIST, ERR_REASON_PV_NOT_EXIST),
)


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """What binding the pod's claims takes on one node (``PodVolumes`` upstream)."""

    static_bindings: tuple[tuple[PersistentVolumeClaim, PersistentVolume], ...] = ()
    """(claim, volume) pairs for pre-provisioned volumes."""
    dynamic_provisions: tuple[PersistentVolumeClaim, ...] = ()
    """Claims to provision on the node."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One evaluation over a table's nodes."""

    index: Mapping[str, int]
    codes: NDArray[np.int64]
    """Per row: the reason bits (0: the node passes)."""
    to_match: tuple[PersistentVolumeClaim, ...]
    candidates: tuple[PersistentVolume, ...]
    chosen: NDArray[np.intp]
    """``chosen[i, row]``: index into ``candidates`` of the volume claim ``to_match[i]``
    takes on the node, or -1 (to be provisioned)."""
    selected: tuple[PersistentVolumeClaim, ...]
    """Claims with a selected node (provisioned there)."""

    def volumes_for(self, node: str) -> PodVolumes | None:
        row = self.index.get(node)
        if row is None or self.codes[row]:
            return None
        static: list[tuple[PersistentVolumeClaim, PersistentVolume]] = []
        provision = list(self.selected)
        for i, claim in enumerate(self.to_match):
            pick = int(self.chosen[i, row])
            if pick >= 0:
                static.append((claim, self.candidates[pick]))
            else:
                provision.append(claim)
        return PodVolumes(tuple(static), tuple(provision))


@dataclass(frozen=True, slots=True)
class _Kept:
    """A volume's affinity over the rows: ``mask``, or only its ``rows`` when they are
    few (a local volume), or neither when the volume has no affinity (every row)."""

    volume: PersistentVolume
    mask: BoolArray | None = None
    rows: NDArray[np.intp] | None = None

    def expand(self, num_nodes: int) -> BoolArray:
        if self.mask is not None:
            return self.mask
        if self.rows is None:
            return np.ones(num_nodes, dtype=np.bool_)
        mask = np.zeros(num_nodes, dtype=np.bool_)
        mask[self.rows] = True
        return mask


class AffinityMasks:
    """Volume node-affinity masks, kept while the nodes' labels do not change; thousands
    of local volumes cost little memory (see :class:`_Kept`)."""

    def __init__(self) -> None:
        self._attrs: NodeAttributes | None = None
        self._kept: dict[str, _Kept] = {}

    def mask(self, volume: PersistentVolume, attrs: NodeAttributes) -> BoolArray:
        """``CheckNodeAffinity`` for every row."""
        if attrs is not self._attrs:
            self._attrs, self._kept = attrs, {}
        kept = self._kept.get(volume.metadata.name)
        if kept is None or kept.volume is not volume:
            kept = self._kept[volume.metadata.name] = _keep(volume, attrs)
        return kept.expand(attrs.num_nodes)


def _keep(volume: PersistentVolume, attrs: NodeAttributes) -> _Kept:
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return _Kept(volume)
    mask = node_selector_mask(affinity.required, attrs)
    rows = np.flatnonzero(mask)
    return _Kept(volume, rows=rows) if len(rows) * 64 < attrs.num_nodes else _Kept(volume, mask)


def is_volume_bound_to_claim(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """``IsVolumeBoundToClaim``: the claim reference names the claim (and its uid, if set)."""
    ref = volume.spec.claim_ref
    if ref is None:
        return False
    if ref.name != claim.metadata.name or (ref.namespace or "default") != (
        claim.metadata.namespace or "default"
    ):
        return False
    return not ref.uid or ref.uid == claim.metadata.uid


def _fits_regardless_of_node(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """The checks ``FindMatchingVolume`` makes before the node affinity."""
    if volume.spec.claim_ref is not None and not is_volume_bound_to_claim(volume, claim):
        return False
    if volume_capacity(volume) < claim_request(claim):
        return False
    if (claim.spec.volume_mode or FILESYSTEM) != (volume.spec.volume_mode or FILESYSTEM):
        return False
    return volume.metadata.deletion_timestamp is None


def _available_for(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """The checks for a volume not pre-bound to the claim (node affinity aside)."""
    if volume_phase(volume) != VOLUME_AVAILABLE:
        return False
    if claim.spec.selector is not None and not matches_label_selector(
        claim.spec.selector, volume.metadata.labels
    ):
        return False
    if volume_class(volume) != claim_class(claim):
        return False
    return set(claim.spec.access_modes) <= set(volume.spec.access_modes)


class VolumeMatcher:
    def __init__(self, listers: Listers, cache: AssumeCache) -> None:
        self._listers = listers
        self._cache = cache
        self._masks = AffinityMasks()

    def find(self, claims: PodVolumeClaims, nodes: Snapshot) -> Outcome:
        """Evaluate every node; raises StatusError where upstream's FindPodVolumes errs."""
        n = nodes.num_nodes
        codes = self._check_bound(claims.bound, nodes)
        delay = claims.unbound_delay_binding
        selected = tuple(c for c in delay if ANN_SELECTED_NODE in c.metadata.annotations)
        to_match = tuple(
            sorted(
                (c for c in delay if ANN_SELECTED_NODE not in c.metadata.annotations),
                key=claim_request,
            )
        )
        pool: dict[str, int] = {}
        candidates: list[PersistentVolume] = []
        for claim in to_match:
            for volume in claims.volumes_by_class.get(claim_class(claim), ()):
                if volume.metadata.name not in pool:
                    pool[volume.metadata.name] = len(candidates)
                    candidates.append(volume)
        chosen = np.full((len(to_match), n), -1, dtype=np.intp)
        outcome = Outcome(nodes.index, codes, to_match, tuple(candidates), chosen, selected)
        if not delay:
            return outcome
        names = np.asarray(nodes.names, dtype=object)
        fast_fail = np.zeros(n, dtype=np.bool_)
        for claim in selected:
            fast_fail |= names != claim.metadata.annotations[ANN_SELECTED_NODE]
        self._match(claims, to_match, candidates, pool, chosen, ~fast_fail, nodes.attributes)
        unbound_ok = ~fast_fail & self._provision(selected, to_match, chosen, ~fast_fail, nodes)
        codes |= np.where(unbound_ok, 0, BIND_CONFLICT).astype(np.int64)
        return outcome

    def _check_bound(
        self, bound: Sequence[PersistentVolumeClaim], nodes: Snapshot
    ) -> NDArray[np.int64]:
        codes = np.zeros(nodes.num_nodes, dtype=np.int64)
        undecided = np.ones(nodes.num_nodes, dtype=np.bool_)
        for claim in bound:
            volume = self._cache.volume(claim.spec.volume_name or "")
            if volume is None:
                codes[undecided] |= PV_NOT_EXIST
                break
            fits = self._masks.mask(volume, nodes.attributes)
            codes[undecided & ~fits] |= NODE_CONFLICT
            undecided &= fits
        return codes

    def _match(
        self,
        claims: PodVolumeClaims,
        to_match: Sequence[PersistentVolumeClaim],
        candidates: Sequence[PersistentVolume],
        pool: Mapping[str, int],
        chosen: NDArray[np.intp],
        active: BoolArray,
        attrs: NodeAttributes,
    ) -> None:
        """``findMatchingVolumes``: fills ``chosen`` for the ``active`` rows."""
        n = attrs.num_nodes
        taken: dict[int, BoolArray] = {}
        """Candidate → rows where an earlier claim took it (``chosenPVs``)."""
        sizes = sorted({volume_capacity(v) for v in candidates})
        rank = {size: r for r, size in enumerate(sizes)}
        for i, claim in enumerate(to_match):
            decided = ~active
            best = np.full(n, -1, dtype=np.intp)
            best_size = np.full(n, len(sizes), dtype=np.intp)
            for volume in claims.volumes_by_class.get(claim_class(claim), ()):
                p = pool[volume.metadata.name]
                if not _fits_regardless_of_node(volume, claim):
                    continue
                open_rows = ~decided if p not in taken else ~decided & ~taken[p]
                fits = self._masks.mask(volume, attrs)
                if is_volume_bound_to_claim(volume, claim):
                    chosen[i, open_rows & fits] = p
                    decided |= open_rows
                    continue
                if not _available_for(volume, claim):
                    continue
                size = rank[volume_capacity(volume)]
                better = open_rows & fits & (best_size > size)
                best[better] = p
                best_size[better] = size
            undecided = ~decided
            chosen[i, undecided] = best[undecided]
            for p in np.unique(chosen[i][chosen[i] >= 0]).tolist():
                taken.setdefault(p, np.zeros(n, dtype=np.bool_))[chosen[i] == p] = True

    def _provision(
        self,
        selected: Sequence[PersistentVolumeClaim],
        to_match: Sequence[PersistentVolumeClaim],
        chosen: NDArray[np.intp],
        active: BoolArray,
        nodes: Snapshot,
    ) -> BoolArray:
        """``checkVolumeProvisions``: per row, whether every claim left to provision can
        be provisioned there (claims checked in order, the first failure decides)."""
        ok = np.ones(nodes.num_nodes, dtype=np.bool_)
        pending = active.copy()
        needs = [np.ones(nodes.num_nodes, np.bool_) for _ in selected]
        needs += [chosen[i] < 0 for i in range(len(to_match))]
        for claim, needed in zip((*selected, *to_match), needs, strict=True):
            rows = pending & needed
            if not rows.any():
                continue
            fits = self._provisionable(claim, nodes.attributes)
            failed = rows & ~fits
            ok[failed] = False
            pending &= ~failed
        return ok

    def _provisionable(self, claim: PersistentVolumeClaim, attrs: NodeAttributes) -> BoolArray:
        namespace = claim.metadata.namespace or "default"
        class_name = claim_class(claim)
        if not class_name:
            raise StatusError(f'no class for claim "{namespace}/{claim.metadata.name}"')
        storage_class = self._listers.storage_classes.get(class_name)
        if storage_class is None:
            raise StatusError(f'failed to find storage class "{class_name}"')
        provisioner = storage_class.provisioner
        if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            return np.zeros(attrs.num_nodes, dtype=np.bool_)
        return topology_mask(storage_class.allowed_topologies, attrs)
