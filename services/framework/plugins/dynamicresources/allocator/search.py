"""The allocator: upstream's ``Allocator.Allocate`` (``structured/internal``), an
exhaustive depth-first search that stops at the first full solution.

Claims are taken in order, a claim's requests in order, each request's devices one
after the other; for each device the pools (in :func:`.pools.gather_pools` order),
their slices and devices are tried in order. A device in use (allocated before, or
picked earlier in this search) is skipped, unless the request has admin access, which
only needs the device not to be picked for the same claim. A firstAvailable request
tries its subrequests in order. "All" requests fix their devices up front and need
every one of them. On a dead end the last pick is undone (constraints, counters) and
the next candidate is tried.

With DRAConsumableCapacity a device that allows multiple allocations (and is not taken
whole by an allocated claim) stays free for the search's later picks: it takes every
request whose capacity still fits (:mod:`.capacity`,
counting allocated shares and the search's own), each as a share with a new id, and
consumes its counters once, with its first share. Every device is checked against its
capacity, shared or not.

Departures: a shared device's counters are given back when its first share is undone
(upstream keeps them taken for the rest of the search), and the capacity is checked
before the constraints, not after (upstream then leaves the constraints added). Upstream
gathers pools into a Go map, so its pool order is not defined; here
pools come in the order of their first slice in ``slices``, which makes the choice
reproducible. Results of an Allocator are per call; what is kept across calls (the
pools gathered per node name, counters left per pool) assumes the Allocator lives for
one scheduling cycle, as the interface says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from contracts.k8s import Node
from contracts.k8s.resource import (
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
)
from services.framework.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationFailedOnNode,
    AllocatorFeatures,
)
from services.framework.plugins.dynamicresources.allocator.allocated import AllocatedState
from services.framework.plugins.dynamicresources.allocator.cel import CELCache, CELRuntimeError
from services.framework.plugins.dynamicresources.allocator.pools import (
    Pool,
    SliceIndex,
    gather_pools,
)
from services.framework.plugins.dynamicresources.allocator.requests import Candidate
from services.framework.plugins.dynamicresources.allocator.results import build_results
from services.framework.plugins.dynamicresources.allocator.setup import (
    ALLOCATION_RESULTS_MAX_SIZE,
    Counters,
    SearchState,
    prepare,
)


class _MaxSizeExceeded(Exception):
    """``errAllocationResultMaxSizeExceeded``: back off more than one step."""


class Allocator:
    """Built once per scheduling cycle for one set of slices and allocated devices;
    :meth:`allocate` is called per node. See the package docstring."""

    def __init__(
        self,
        *,
        features: AllocatorFeatures,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        cel: CELCache,
        index: SliceIndex | None = None,
    ) -> None:
        """``index``: the slices' index when the caller keeps one for them (it depends
        on nothing else). ``allocated``: what allocated claims hold
        (:mod:`.allocated`)."""
        self.features = features
        self.allocated = allocated
        self.allocated_devices = allocated.devices
        self.classes = classes
        self.index = index if index is not None else SliceIndex(slices)
        self.cel = cel
        self.available_counters: dict[str, Counters] = {}
        """Per pool, the counters left by allocated devices (computed on first use)."""
        self._pools: dict[str, list[Pool]] = {}

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim]
    ) -> list[AllocationResult] | None:
        pools = self._pools.get(node.metadata.name)
        if pools is None:
            pools = self._pools[node.metadata.name] = gather_pools(self.index, node, self.features)
        state = prepare(self, node, claims, pools)
        run = _Search(self, state)
        try:
            done = run.allocate_one(0, 0, 0, 0, False)
        except _MaxSizeExceeded:
            done = False
        if not done:
            if any(pool.invalid for pool in pools):
                raise AllocationFailedOnNode("invalid resource pools were encountered")
            return None
        return build_results(self, state, node)

    def selector_matches(
        self,
        expression: str,
        candidate: Candidate,
        where: str,
        index: int,
    ) -> bool:
        """One selector against one device (evaluated once: :class:`CELCache`)."""
        compiled = self.cel.get_or_compile(expression)
        if compiled.error is not None:
            raise AllocationError(
                f"{where}: selector #{index}: CEL compile error: {compiled.error}"
            )
        try:
            return self.cel.matches(compiled, candidate.driver, candidate.device)
        except CELRuntimeError as err:
            raise AllocationError(
                f"{where}: selector #{index} on device {candidate.id}: CEL runtime error: {err}"
            ) from None


class _Search:
    """One ``Allocate`` call's search (upstream's ``allocator``)."""

    def __init__(self, owner: Allocator, state: SearchState) -> None:
        self.owner = owner
        self.state = state

    def allocate_one(
        self, claim_i: int, request_i: int, sub_i: int, device_i: int, in_sub: bool
    ) -> bool:
        state = self.state
        if claim_i >= len(state.claims):
            return True
        claim = state.claims[claim_i]
        if request_i >= len(claim.spec.devices.requests):
            try:
                return self.allocate_one(claim_i + 1, 0, 0, 0, False)
            except _MaxSizeExceeded:
                return False
        key = (claim_i, request_i, sub_i)
        data = state.request_data[key]
        if not in_sub and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (claim_i, request_i, sub) in state.request_data:
                try:
                    success = self.allocate_one(claim_i, request_i, sub, device_i, True)
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    state.request_data[key].selected_sub_request = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False
        request = data.request
        all_mode = request.allocation_mode == "All"
        if all_mode and not data.all_devices:
            return False
        if device_i >= data.num_devices:
            return self.allocate_one(claim_i, request_i + 1, 0, 0, False)
        picked = len(state.results[claim_i]) + data.num_devices - device_i
        if picked > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if all_mode:
            candidate = data.all_devices[device_i]
            undo = state.allocate_device(claim_i, key, candidate, must=True)
            if undo is None:
                return False
            try:
                done = self.allocate_one(claim_i, request_i, sub_i, device_i + 1, in_sub)
            except _MaxSizeExceeded:
                undo()
                raise
            if not done:
                undo()
            return done
        for pool in state.pools:
            if pool.incomplete or pool.invalid:
                continue
            for candidate in pool.candidates():
                if request.admin_access:
                    if state.allocating_for_claim(candidate.id, claim_i):
                        continue
                elif state.in_use(candidate.id):
                    continue
                if not state.is_selectable(key, data, candidate):
                    continue
                undo = state.allocate_device(claim_i, key, candidate, must=False)
                if undo is None:
                    continue
                try:
                    done = self.allocate_one(claim_i, request_i, sub_i, device_i + 1, in_sub)
                except _MaxSizeExceeded:
                    undo()
                    raise
                if done:
                    return True
                undo()
        return False
