"""DynamicResources: the pod's ResourceClaims must be allocated, or allocatable, on the
node (upstream's ``plugins/dynamicresources``, structured parameters).

- PreEnqueue: every claim must exist, not be being deleted, and (generated from a
  template) be the pod's; else the pod waits, with upstream's message.
- PreFilter: the same checks (UnschedulableAndUnresolvable); an allocated claim must be
  reservable; an unallocated one must not be in flight for another pod, and its device
  classes must exist. Builds one allocator for the pod over every ResourceSlice and
  the devices taken (allocated claims and this replica's in-flight allocations). A pod
  without claims nor extended resources backed by DRA (:mod:`.extended`): Skip.
- Filter: an allocated claim's node selector must match the node; the claims to
  allocate must all fit there (the allocator, within ``filterTimeout``). Nodes no
  ResourceSlice can serve are rejected without asking the allocator. An allocator
  error (CEL) fails the attempt; invalid pools only reject the node.
- PostFilter: deallocates a claim unavailable on some node, reserved by nobody or by
  this pod only (a ClaimStatusEffect the scheduler publishes).
- PreScore / Score: with DRAPrioritizedList, higher-ranked ``firstAvailable``
  subrequests score more; normalized to 0-100.
- Reserve / Unreserve: record / drop the allocations in flight
  (:mod:`.inflight`) and the devices they take (``CycleState.reserved_devices``).
- PreBind (in the binder): one ClaimStatusEffect per claim not reserved for the pod
  yet, from the binding state (:mod:`.binding`); then the binder waits on the devices'
  binding conditions (:mod:`.prebind`).
- ``--explain``: the device of each request on the chosen node (ExplainsNode).

Every rejection is UnschedulableAndUnresolvable, as upstream's ``statusUnschedulable``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np

from contracts.k8s import Node, Pod, ResourceSlice
from contracts.k8s.resource import AllocationResult, ResourceClaim
from services.common import features
from services.common.k8s.devices import exclusive_devices
from services.common.k8s.nodeaffinity import Term, compile_terms, terms_match
from services.framework.api.bindwait import BindingWait
from services.framework.api.diagnosis import Diagnosis
from services.framework.api.effects import ClaimStatusEffect
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
    ExplainsNode,
    FilterPlugin,
    FilterResult,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from services.framework.api.listers import Listers
from services.framework.api.status import SKIP, SUCCESS, Code, Status, StatusError
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.dynamicresources import (
    binding,
    conditions,
    explain,
    extended,
    hints,
    prebind,
)
from services.framework.plugins.dynamicresources.allocating import (
    Lazy,
    structured_allocator,
    warm,
)
from services.framework.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationFailedOnNode,
)
from services.framework.plugins.dynamicresources.allocator.cel import CELCache
from services.framework.plugins.dynamicresources.args import (
    DynamicResourcesArgs,
    binding_conditions_enabled,
)
from services.framework.plugins.dynamicresources.claims import (
    ClaimProblem,
    can_be_reserved,
    check_class,
    claim_uid,
    is_reserved_for_pod,
    pod_claims,
    unschedulable,
)
from services.framework.plugins.dynamicresources.inflight import InFlightAllocations
from services.framework.plugins.dynamicresources.memo import Answer, FilterMemo, signature
from services.framework.plugins.dynamicresources.prebind import PENDING_KEY
from services.framework.plugins.dynamicresources.score import compute_score
from services.framework.plugins.dynamicresources.state import (
    AllocatorFactory,
    StateData,
    asks_for_devices,
    servable_nodes,
)
from services.framework.plugins.helper.normalize_score import default_normalize_score

NAME: Final = "DynamicResources"
STATE_KEY: Final = NAME
MAX_NODE_SCORE: Final = 100

ERR_CANNOT_ALLOCATE: Final = "cannot allocate all claims"
ERR_TIMEOUT: Final = "timed out trying to allocate devices"
ERR_NOT_AVAILABLE: Final = "resourceclaim not available on the node"
ERR_IN_USE: Final = "resourceclaim in use"
MSG_DEALLOCATED: Final = "deallocation of ResourceClaim completed"
MSG_NO_CLAIMS: Final = "no new claims to deallocate"
MSG_STILL_NOT_SCHEDULABLE: Final = "still not schedulable"

_PASSED, _CANNOT_ALLOCATE, _TIMED_OUT, _NOT_AVAILABLE = 0, 1, 2, 3
_STATUSES: Final = {
    code: Status(Code.UnschedulableAndUnresolvable, (text,))
    for code, text in (
        (_CANNOT_ALLOCATE, ERR_CANNOT_ALLOCATE),
        (_TIMED_OUT, ERR_TIMEOUT),
        (_NOT_AVAILABLE, ERR_NOT_AVAILABLE),
    )
}


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ScoreExtensions,
    ReservePlugin,
    BindingState,
    PreBindPlugin,
    EnqueueExtensions,
    ExplainsNode,
):
    name: Final = NAME

    def __init__(
        self,
        args: DynamicResourcesArgs,
        listers: Listers,
        *,
        new_allocator: AllocatorFactory | None = None,
        now: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.args = args
        self._listers = listers
        self.in_flight = InFlightAllocations(listers)
        self._new_allocator = new_allocator
        """None: the structured allocator, built at first use."""
        self._slices: tuple[int, list[ResourceSlice], frozenset[str] | None] | None = None
        """The listers' slices and the nodes they may serve, at a device generation."""
        self._cel = CELCache()
        """Compiled selectors and their results per device, for the plugin's lifetime."""
        self._memo = FilterMemo()
        self._elsewhere: frozenset[str] = frozenset()
        """The devices held elsewhere at the last PreFilter (their changes count)."""
        """The allocator's answers per node, reused across pods (:mod:`.memo`)."""
        self._now = now
        """Wall time: binding timeouts, ``allocationTimestamp``."""
        self._clock = clock
        """Elapsed time: the filter timeout."""
        self._filter_timeout = args.filter_timeout_seconds
        self._binding_timeout = args.binding_timeout_seconds

    # -- events -----------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Nodes appearing or changing; claims, classes and slices changing; the pod
        getting its generated claims' names."""
        add_update = ActionType.Add | ActionType.Update
        node = (
            ActionType.Add
            | ActionType.UpdateNodeLabel
            | ActionType.UpdateNodeTaint
            | ActionType.UpdateNodeAllocatable
        )
        return (
            ClusterEventWithHint(ClusterEvent(EventResource.Node, node)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.ResourceClaim, add_update),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.Pod, ActionType.UpdatePodGeneratedResourceClaim),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.DeviceClass, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.ResourceSlice, add_update)),
        )

    warm_kinds: Final = frozenset({"resourceslice", "deviceclass"})

    def warm_up(self) -> None:
        """``WarmUp``: every class selector on every device, as soon as slices or
        classes arrive (the first pod would pay for them otherwise)."""
        warm(self._cel, self._listers.device_classes, list(self._listers.resource_slices.values()))

    def is_schedulable_after_claim_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        return hints.after_claim_change(self._listers, pod, old, new)

    def is_schedulable_after_pod_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        return hints.after_pod_change(self._listers, pod, old, new)

    # -- PreEnqueue / PreFilter -------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.pod.spec.resource_claims:
            return SUCCESS
        try:
            for _ in pod_claims(pod.pod, self._listers):
                pass
        except ClaimProblem as problem:
            return unschedulable(str(problem))
        return SUCCESS

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(STATE_KEY, StateData())
        ext = extended.pre_filter(pod, self._listers)
        if not pod.pod.spec.resource_claims and ext is None:
            return None, SKIP
        self.in_flight.refresh(nodes)
        try:
            found = list(pod_claims(pod.pod, self._listers))
        except ClaimProblem as problem:
            return None, unschedulable(str(problem))
        if not found and ext is None:
            return None, SKIP
        # PostFilter sees the claims only once every check passed (upstream stores
        # them last): a pod rejected here has "no new claims to deallocate".
        data = StateData(
            pod=pod.pod,
            names=[name for name, _ in found],
            claims=[claim for _, claim in found],
        )
        data.add_extended(ext, self.in_flight)
        for index, claim in enumerate(data.claims):
            status = self._check_claim(pod.pod, claim, index, data)
            if status is not None:
                return None, status
        if data.to_allocate():
            classes = self._listers.device_classes
            generation = self._listers.device_generation
            if self._slices is None or self._slices[0] != generation:
                slices = list(self._listers.resource_slices.values())
                self._slices = (generation, slices, servable_nodes(slices))
            _, slices, servable = self._slices
            if self._new_allocator is None:
                self._new_allocator = structured_allocator(self._cel)
            # Devices other replicas' reservations hold, as the store said (the
            # scheduler's Cache): not chosen again while the pod is retried.
            elsewhere = self._listers.devices_held_elsewhere(self._now())
            changed = self.in_flight.drain_changes() | (elsewhere ^ self._elsewhere)
            self._elsewhere = elsewhere
            allocated = self.in_flight.allocated_state(elsewhere)
            data.allocator = Lazy(self._new_allocator, allocated, classes, slices)
            self._memo.begin(slices, classes, allocated.devices, generation, changed)
            if ext is None:  # else a claim per node: no memo key for them all
                data.memo_key = signature([data.claims[i] for i in data.to_allocate()])
            if all(asks_for_devices(data.claims[i]) for i in data.to_allocate()):
                data.servable = servable
        state.write(STATE_KEY, data)
        return None, SUCCESS

    def _check_claim(
        self, pod: Pod, claim: ResourceClaim, index: int, data: StateData
    ) -> Status | None:
        meta = claim.metadata
        allocation = claim.status.allocation
        if allocation is not None:
            if not can_be_reserved(claim) and not is_reserved_for_pod(pod, claim):
                return unschedulable(ERR_IN_USE)
            terms: tuple[Term, ...] | None = None
            if allocation.node_selector is not None:
                terms = compile_terms(allocation.node_selector.node_selector_terms, "")
                errors = [e for t in terms for e in t.errors]
                if errors:
                    return Status(Code.Error, (str(errors[0]),))
            data.available_on.append(terms)
            timeout, now = self._binding_timeout, self._now()
            if binding_conditions_enabled() and conditions.unready(claim, timeout, now):
                data.unready.append(index)
            return None
        data.available_on.append(None)
        if self.in_flight.has(claim_uid(claim)):
            return unschedulable(
                f"resource claim {meta.namespace}/{meta.name} is in the process of being allocated"
            )
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                status = check_class(
                    self._listers.device_classes, request.exactly.device_class_name, request.name
                )
            elif request.first_available:
                if not features.enabled("DRAPrioritizedList"):
                    return unschedulable(
                        f"resource claim {meta.namespace}/{meta.name}, request {request.name}: "
                        "has subrequests, but the DRAPrioritizedList feature is disabled"
                    )
                status = None
                for sub in request.first_available:
                    status = check_class(
                        self._listers.device_classes,
                        sub.device_class_name,
                        f"{request.name}/{sub.name}",
                    )
                    if status is not None:
                        break
            else:
                return unschedulable(
                    f"resource claim {meta.namespace}/{meta.name}, request {request.name}: "
                    "unknown request type"
                )
            if status is not None:
                return status
        return None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # -- Filter -------------------------------------------------------------------------

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        data = state.read(STATE_KEY, StateData)
        if not data.claims:
            return FilterResult.all_passed(nodes.num_nodes)
        to_allocate = [data.claims[i] for i in data.to_allocate()]
        # Only claims to allocate (none allocated, none waiting on conditions): the
        # memo's codes of the last pod with the same claims hold for every node but
        # those whose devices changed since.
        simple = (
            data.allocator is not None
            and data.extended is None
            and not data.unready
            and all(terms is None for terms in data.available_on)
        )
        kept = self._memo.codes(data.memo_key, nodes) if simple else None
        if kept is not None:
            codes, dirty = kept
            try:
                for name in dirty:
                    row = nodes.index.get(name)
                    if row is not None:
                        codes[row] = self._filter_node(data, nodes.nodes[row], to_allocate)
            except AllocationFailedOnNode:
                kept = None  # a status of its own: the whole pass below
            else:
                self._memo.keep_codes(data.memo_key, nodes, codes)
                return FilterResult(codes == _PASSED, codes, _STATUSES.__getitem__)
        codes = np.zeros(nodes.num_nodes, dtype=np.int64)
        statuses = dict(_STATUSES)
        for row in range(nodes.num_nodes):
            try:
                codes[row] = self._filter_node(data, nodes.nodes[row], to_allocate)
            except AllocationFailedOnNode as err:
                # Not the pod's error: this node is unschedulable, with the reason.
                status = unschedulable(str(err))
                code = next((c for c, s in statuses.items() if s == status), len(statuses) + 1)
                statuses[code] = status
                codes[row] = code
        if simple and len(statuses) == len(_STATUSES) and not (codes == _TIMED_OUT).any():
            self._memo.keep_codes(data.memo_key, nodes, codes)
        return FilterResult(codes == _PASSED, codes, statuses.__getitem__)

    def _allocations(self, data: StateData, node: str) -> list[AllocationResult] | None:
        """Filter's allocations for ``node``: asked in this attempt, or the memo's."""
        found = data.node_allocations.get(node)
        if found is None and data.memo_key:
            answer = self._memo.answer(data.memo_key, node)
            if answer is not None and answer.failed is None:
                found = answer.allocations
        return found

    def _filter_node(self, data: StateData, node: Node, to_allocate: list[ResourceClaim]) -> int:
        found = data.claims_on(node, to_allocate)
        if found is None:
            return _PASSED
        to_allocate, key = found
        unavailable = [
            index
            for index, terms in enumerate(data.available_on)
            if terms is not None and not terms_match(terms, node)
        ]
        unavailable += data.unready
        allocations: list[AllocationResult] | None = None
        if data.allocator is not None:
            name = node.metadata.name
            if data.servable is not None and name not in data.servable:
                return _CANNOT_ALLOCATE
            answer = self._memo.get(key, node)
            if answer is None:
                started = self._clock()
                try:
                    allocations = data.allocator.allocate(node, to_allocate)
                except AllocationFailedOnNode as err:
                    self._memo.put(key, Answer(node, None, str(err)))
                    raise
                except AllocationError as err:
                    raise StatusError(str(err)) from err
                if self._filter_timeout > 0 and self._clock() - started > self._filter_timeout:
                    return _TIMED_OUT
                self._memo.put(key, Answer(node, allocations))
            elif answer.failed is not None:
                raise AllocationFailedOnNode(answer.failed)
            else:
                allocations = answer.allocations
            if allocations is None or len(allocations) != len(to_allocate):
                return _CANNOT_ALLOCATE
        if unavailable:
            data.unavailable.update(unavailable)
            return _NOT_AVAILABLE
        if allocations is not None:
            data.node_allocations[node.metadata.name] = allocations
        return _PASSED

    # -- PostFilter ---------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """Deallocates one claim unavailable on some node and reserved by nobody or
        this pod only: a ClaimStatusEffect the scheduler publishes (``claim.<ns>``)."""
        try:
            data = state.read(STATE_KEY, StateData)
        except StatusError:
            # Upstream's CycleState.Read error, as a FailedScheduling message shows it
            # when an earlier PreFilter rejected the pod ("... PersistentVolumeClaims.
            # not found"); preemption does not run then.
            return None, Status(Code.Error, ("not found",))
        if not data.claims:
            return None, Status(Code.Unschedulable, (MSG_NO_CLAIMS,))
        for index in sorted(data.unavailable):
            reserved = data.claims[index].status.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                state.effects.append(ClaimStatusEffect(binding.deallocated(data.claims[index])))
                return None, Status(Code.Unschedulable, (MSG_DEALLOCATED,))
        return None, Status(Code.Unschedulable, (MSG_STILL_NOT_SCHEDULABLE,))

    # -- PreScore / Score ---------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status:
        """Skip when every node would score 0: no allocation in this cycle, or no
        ``firstAvailable`` request (ksched's shortcut; upstream scores 0 everywhere)."""
        data = state.read(STATE_KEY, StateData)
        if not features.enabled("DRAPrioritizedList") or data.allocator is None:
            return SKIP
        if not any(r.first_available for c in data.claims for r in c.spec.devices.requests):
            return SKIP
        return SUCCESS

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        data = state.read(STATE_KEY, StateData)
        scores = np.zeros(len(rows), dtype=np.int64)
        for i, row in enumerate(rows.tolist()):
            allocations = self._allocations(data, nodes.names[row])
            if allocations is not None:
                scores[i] = compute_score(data.scored_claims(nodes.names[row]), allocations)
        return scores

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Int64Array) -> Int64Array:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # -- Reserve / Unreserve ------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        data = state.read(STATE_KEY, StateData)
        data.settle(node)
        to_allocate = data.to_allocate()
        if not to_allocate:
            return SUCCESS
        allocations = self._allocations(data, node)
        if not allocations:
            return Status(Code.Error, ("claim allocation not found for node",))
        if len(allocations) != len(to_allocate):
            return Status(
                Code.Error,
                (
                    f"internal error, have {len(allocations)} allocations, {len(to_allocate)} "
                    f"claims to allocate, want {len(to_allocate)} claims",
                ),
            )
        for index, allocation in zip(to_allocate, allocations, strict=True):
            data.allocations[index] = allocation
            allocated = binding.with_allocation(data.claims[index], allocation)
            self.in_flight.signal(allocated, pod.uid, node)
            state.reserved_devices.extend(exclusive_devices(allocation))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Drop the pod's allocations in flight and their devices from
        ``reserved_devices`` (a retry on another node fills them anew); idempotent.
        Upstream also patches the pod out of ``reservedFor`` of a claim PreBind reserved;
        ksched keeps it there (a claim whose binding conditions failed is then reserved
        for the pod alone, and its next attempt's PostFilter deallocates it)."""
        try:
            data = state.read(STATE_KEY, StateData)
        except StatusError:
            return
        for claim in data.claims:
            self.in_flight.remove(claim_uid(claim), pod.uid)
        for allocation in data.allocations.values():
            for device in exclusive_devices(allocation):
                if device in state.reserved_devices:
                    state.reserved_devices.remove(device)
        data.allocations.clear()

    # -- binding state / PreBind --------------------------------------------------------

    def binding_state(self, state: CycleState) -> bytes | None:
        """``BindingState``: :class:`.binding.PendingClaims` as JSON (None: nothing)."""
        try:
            pending = state.read(STATE_KEY, StateData).pending()
        except StatusError:
            return None
        return binding.encoder.encode(pending) if pending is not None else None

    def restore_binding_state(self, state: CycleState, data: bytes) -> None:
        state.write(PENDING_KEY, binding.decoder.decode(data))

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Publishes the claims (from the binding state in the binder, else from
        PreFilter and Reserve); the binder then waits on their binding conditions."""
        try:
            pending = state.read(PENDING_KEY, binding.PendingClaims)
        except StatusError:
            try:
                found = state.read(STATE_KEY, StateData).pending()
            except StatusError:
                return SUCCESS
            if found is None:
                return SUCCESS
            pending = found
        stamp = self._stamp if binding_conditions_enabled() else None
        status = prebind.pre_bind(state, pod, pending, stamp)
        if not status.is_success():
            return status
        return extended.publish_status(pending, pod.pod, state.effects)

    waits_on: Final = prebind.WAITS_ON

    def binding_wait(self, state: CycleState, node: str) -> BindingWait | None:
        return prebind.binding_wait(state, node, self._binding_timeout)

    def binding_ready(
        self, resumed: CycleState, objects: Mapping[str, bytes], now: float, deadline: float
    ) -> Status | None:
        return prebind.binding_ready(resumed, objects, self._binding_timeout, now, deadline)

    def _stamp(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._now()))

    # -- explain ------------------------------------------------------------------------

    def explain_node(self, state: CycleState, pod: PodInfo, node: str) -> Mapping[str, Any] | None:
        """For ``--explain``: which device of which pool each request of each claim
        gets on ``node`` (already allocated claims as allocated)."""
        try:
            data = state.read(STATE_KEY, StateData)
        except StatusError:
            return None
        return explain.claim_devices(data, node, self._allocations(data, node))


def new(args: DynamicResourcesArgs | None, handle: Handle) -> DynamicResources:
    return DynamicResources(
        args or DynamicResourcesArgs().defaulted(), handle.listers, now=handle.now
    )
