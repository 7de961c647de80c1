"""VolumeBinding: the pod's claims must be bound, or bindable, on the node.

- PreFilter: every claim must exist (and not be lost, deleted, or another pod's
  ephemeral claim), else UnschedulableAndUnresolvable with the claim's error; unbound
  claims of an Immediate class fail with "pod has unbound immediate
  PersistentVolumeClaims". Bound local volumes (``kubernetes.io/hostname In``) narrow
  the nodes. A pod without claims: Skip.
- Filter: see :mod:`.matching` (UnschedulableAndUnresolvable, with every reason).
- PreScore / Score: skipped; the score needs the StorageCapacityScoring gate, off in
  the current release (see :mod:`.args`).
- Reserve: assumes the node's volume choices in the plugin's :class:`AssumeCache`, so the
  next pods, even in the same batch, do not take the same volumes; Unreserve reverts.
- PreBind (in the binder, another process): what Reserve decided travels as the
  plugin's binding state (:func:`claim_bindings`, encoded); PreBind leaves the volume
  and claim updates as watch-event effects the binder publishes before the Binding
  (see :mod:`.prebind`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

import msgspec
import numpy as np

from contracts.k8s import PersistentVolume, Pod
from services.framework.api.effects import WatchEffect
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from services.framework.api.interface import (
    BindingState,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    Handle,
    PreBindPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    Rows,
    ScorePlugin,
)
from services.framework.api.listers import Listers
from services.framework.api.status import SKIP, SUCCESS, Code, Status, StatusError
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.volumebinding.args import VolumeBindingArgs
from services.framework.plugins.volumebinding.assume_cache import AssumeCache
from services.framework.plugins.volumebinding.claims import (
    ClaimProblem,
    PodVolumeClaims,
    eligible_nodes,
    pod_has_claims,
    pod_volume_claims,
)
from services.framework.plugins.volumebinding.matching import (
    REASONS,
    Outcome,
    PodVolumes,
    VolumeMatcher,
)
from services.framework.plugins.volumebinding.prebind import (
    ClaimBinding,
    bind_volume_to_claim,
    static_binding,
    with_annotation,
)
from services.framework.plugins.volumehelpers.claims import (
    ANN_SELECTED_NODE,
    is_fully_bound,
    pod_claim_name,
)

NAME: Final = "VolumeBinding"
STATE_KEY: Final = NAME
ERR_REASON_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(slots=True)
class StateData:
    """What VolumeBinding keeps for one attempt; shared by clones, as upstream's pointer."""

    claims: PodVolumeClaims | None = None
    """None when the pod has no claim (PreFilter skipped)."""
    outcomes: list[Outcome] = field(default_factory=list)
    """Every Filter evaluation (the nominated-pods pass adds one for some rows)."""
    all_bound: bool = False
    """Set by Reserve: nothing to bind for the chosen node."""
    decided: PodVolumes | None = None
    """Set by Reserve: the bindings assumed for the chosen node."""

    def clone(self) -> StateData:
        return self

    def volumes_for(self, node: str) -> PodVolumes | None:
        for outcome in reversed(self.outcomes):
            if node in outcome.index:
                return outcome.volumes_for(node)
        return None


@lru_cache(maxsize=16)
def _status(code: int) -> Status:
    reasons = tuple(text for bit, text in REASONS if code & bit)
    return Status(Code.UnschedulableAndUnresolvable, reasons)


class VolumeBinding(
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    BindingState,
    PreBindPlugin,
    EnqueueExtensions,
):
    name: Final = NAME

    def __init__(self, args: VolumeBindingArgs, listers: Listers) -> None:
        self.args = args
        self._listers = listers
        self.cache = AssumeCache(listers)
        self._matcher = VolumeMatcher(listers, self.cache)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Classes, claims and volumes changing; nodes appearing or relabelled; CSI
        objects (registered for parity, ksched does not ingest them)."""
        add_update = ActionType.Add | ActionType.Update
        node = ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint
        return (
            ClusterEventWithHint(ClusterEvent(EventResource.StorageClass, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.PersistentVolumeClaim, add_update)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PersistentVolume, add_update), _after_volume_change
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.Node, node)),
            ClusterEventWithHint(ClusterEvent(EventResource.CSINode, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.CSIDriver, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.CSIStorageCapacity, add_update)),
        )

    # -- PreFilter / Filter ---------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        self.cache.refresh(nodes)
        try:
            if not pod_has_claims(pod.pod, self._listers):
                state.write(STATE_KEY, StateData())
                return None, SKIP
            claims = pod_volume_claims(pod.pod, self.cache, self._listers)
        except ClaimProblem as problem:
            return None, Status(Code.UnschedulableAndUnresolvable, (str(problem),))
        if claims.unbound_immediate:
            return None, Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_UNBOUND_IMMEDIATE,))
        eligible = eligible_nodes(claims.bound, self.cache)
        state.write(STATE_KEY, StateData(claims=claims))
        result = PreFilterResult(frozenset(eligible)) if eligible is not None else None
        return result, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        data = state.read(STATE_KEY, StateData)
        if data.claims is None:
            return FilterResult.all_passed(nodes.num_nodes)
        outcome = self._matcher.find(data.claims, nodes)
        data.outcomes.append(outcome)
        return FilterResult(outcome.codes == 0, outcome.codes, _status)

    # -- PreScore / Score -----------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status:
        """Skip: no scorer without the StorageCapacityScoring gate."""
        return SKIP

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        return np.zeros(len(rows), dtype=np.int64)

    # -- Reserve / Unreserve / PreBind ----------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Assume the node's bindings (``AssumePodVolumes``)."""
        data = state.read(STATE_KEY, StateData)
        volumes = data.volumes_for(node)
        if volumes is None or self._all_bound(pod.pod):
            data.all_bound = True
            return SUCCESS
        bindings = []
        for claim, volume in volumes.static_bindings:
            bound, dirty = bind_volume_to_claim(volume, claim)
            if dirty:
                self.cache.assume_volume(bound, pod.uid, node)
            bindings.append((claim, bound))
        provisions = []
        for claim in volumes.dynamic_provisions:
            selected = with_annotation(claim, ANN_SELECTED_NODE, node)
            self.cache.assume_claim(selected, pod.uid, node)
            provisions.append(selected)
        data.all_bound = False
        data.decided = PodVolumes(tuple(bindings), tuple(provisions))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Revert what Reserve assumed (``RevertAssumedPodVolumes``); idempotent."""
        try:
            data = state.read(STATE_KEY, StateData)
        except StatusError:
            return
        if data.decided is None:
            return
        for _claim, volume in data.decided.static_bindings:
            self.cache.restore_volume(volume.metadata.name, pod.uid)
        for claim in data.decided.dynamic_provisions:
            namespace = claim.metadata.namespace or "default"
            self.cache.restore_claim(f"{namespace}/{claim.metadata.name}", pod.uid)
        data.decided = None

    def binding_state(self, state: CycleState) -> bytes | None:
        """``BindingState``: what Reserve decided (:func:`claim_bindings`), for PreBind
        in the binder; None when there is nothing to bind."""
        bindings = claim_bindings(state)
        return _bindings_encoder.encode(bindings) if bindings else None

    def restore_binding_state(self, state: CycleState, data: bytes) -> None:
        state.write(BINDINGS_KEY, _BindingsToApply(_bindings_decoder.decode(data)))

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """``PreBind``: the volume (if any) and then the claim of every decided binding,
        as MODIFIED watch events for the binder to publish before the Binding. In the
        binder the bindings come from the binding state (none handed on: nothing to
        do); in the scheduling cycle's own state, from Reserve's decision."""
        try:
            bindings = state.read(BINDINGS_KEY, _BindingsToApply).bindings
        except StatusError:
            try:
                data = state.read(STATE_KEY, StateData)
            except StatusError:
                return SUCCESS
            if not data.all_bound and data.decided is None:
                return Status(Code.Error, (f'no pod volumes found for node "{node}"',))
            bindings = claim_bindings(state)
        for binding in bindings:
            if binding.volume is not None:
                state.effects.append(WatchEffect("persistentvolume", "MODIFIED", binding.volume))
            state.effects.append(WatchEffect("persistentvolumeclaim", "MODIFIED", binding.claim))
        return SUCCESS

    def _all_bound(self, pod: Pod) -> bool:
        """``arePodVolumesBound``."""
        for volume in pod.spec.volumes:
            named = pod_claim_name(pod, volume)
            if named is None:
                continue
            claim = self.cache.claim(pod.metadata.namespace, named[0])
            if claim is None or not is_fully_bound(claim):
                return False
        return True


BINDINGS_KEY: Final = f"{NAME}/bindings"
"""Where the binder's CycleState holds the bindings handed on (``restore_binding_state``)."""


@dataclass(frozen=True, slots=True)
class _BindingsToApply:
    bindings: list[ClaimBinding]


_bindings_encoder = msgspec.json.Encoder()
_bindings_decoder = msgspec.json.Decoder(list[ClaimBinding])


def claim_bindings(state: CycleState) -> list[ClaimBinding]:
    """The bindings Reserve decided, finished as the binder must publish them; empty
    when VolumeBinding did not run or every claim was already bound."""
    try:
        data = state.read(STATE_KEY, StateData)
    except StatusError:
        return []
    if data.all_bound or data.decided is None:
        return []
    bindings = [static_binding(c, v) for c, v in data.decided.static_bindings]
    bindings += [ClaimBinding(claim=claim) for claim in data.decided.dynamic_provisions]
    return bindings


def _after_volume_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeChange``: any volume event may help a pod
    with claims."""
    if not isinstance(new, PersistentVolume):
        return QueueingHint.Queue
    has_claims = any(
        v.persistent_volume_claim is not None or v.ephemeral is not None for v in pod.spec.volumes
    )
    return QueueingHint.Queue if has_claims else QueueingHint.QueueSkip


def new(args: VolumeBindingArgs | None, handle: Handle) -> VolumeBinding:
    return VolumeBinding(args or VolumeBindingArgs().defaulted(), handle.listers)
