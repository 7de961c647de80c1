"""Before the search: each request checked and resolved (class, count, the devices of
an "All" request), each claim's constraints built; during it, the state a pick changes
(devices being allocated, constraints, consumed counters) with its undo.

Upstream's ``Allocate`` preamble, ``validateDeviceRequest``, ``isSelectable`` and
``allocateDevice``; the error texts are upstream's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Final

from contracts.k8s import Node
from contracts.k8s.base import Quantity
from contracts.k8s.resource import DeviceRequest, ResourceClaim
from contracts.quantity import parse_quantity
from services.framework.plugins.dynamicresources.allocator import AllocationError
from services.framework.plugins.dynamicresources.allocator.capacity import (
    CapacityConflict,
    ConsumedCapacity,
    fits,
    status_names,
)
from services.framework.plugins.dynamicresources.allocator.pools import Pool, node_matches
from services.framework.plugins.dynamicresources.allocator.requests import (
    Candidate,
    Constraint,
    DistinctAttribute,
    MatchAttribute,
    RequestData,
    RequestView,
    exact_view,
    kobj,
    sub_view,
    taint_prevents_allocation,
)

if TYPE_CHECKING:
    from services.framework.plugins.dynamicresources.allocator.search import Allocator

_NOTHING: Final[ConsumedCapacity] = {}
RequestKey = tuple[int, int, int]
"""(claim index, request index, subrequest index)."""
Counters = dict[str, dict[str, Fraction]]
"""counter set -> counter -> amount."""
ALLOCATION_RESULTS_MAX_SIZE: Final = 32
"""``resourceapi.AllocationResultsMaxSize``."""


@dataclass(frozen=True, slots=True)
class Picked:
    """One device picked for a claim (``internalDeviceResult``)."""

    request: str
    parent: str | None
    candidate: Candidate
    admin_access: bool
    view: RequestView
    share_id: str | None = None
    """A share of a device that allows multiple allocations: its new id."""
    consumed: dict[str, Quantity] | None = None
    """The share's ``consumedCapacity`` (status names)."""


@dataclass(slots=True)
class SearchState:
    owner: Allocator
    node: Node
    claims: Sequence[ResourceClaim]
    pools: list[Pool]
    request_data: dict[RequestKey, RequestData] = field(default_factory=dict)
    constraints: list[list[Constraint]] = field(default_factory=list)
    results: list[list[Picked]] = field(default_factory=list)
    allocating: dict[str, set[int]] = field(default_factory=dict)
    consumed: dict[str, Counters] = field(default_factory=dict)
    selectable: dict[tuple[RequestKey, str], bool] = field(default_factory=dict)
    allocating_capacity: dict[str, ConsumedCapacity] = field(default_factory=dict)
    """Per shared device, the capacity this search's picks consume."""
    allocating_shares: dict[str, int] = field(default_factory=dict)
    """Per shared device, how many of this search's picks share it."""

    def in_use(self, device_id: str) -> bool:
        return device_id in self.owner.allocated_devices or bool(self.allocating.get(device_id))

    def capacity_fits(self, request: RequestView, candidate: Candidate) -> ConsumedCapacity | None:
        """``CmpRequestOverCapacity``: what the request would consume of the device, or
        None when it does not fit (see :mod:`.capacity`)."""
        device = candidate.device
        if not device.capacity:
            return None if request.capacity else _NOTHING
        allocated = self.owner.allocated.capacity.get(candidate.id, _NOTHING)
        if (
            not request.capacity
            and not device.allow_multiple_allocations
            and allocated is _NOTHING
            and all(c.request_policy is None for c in device.capacity.values())
        ):
            # Each capacity consumed whole by a device nobody shares: it fits (what it
            # consumes is recorded for shares only).
            return _NOTHING
        allocating = self.allocating_capacity.get(candidate.id, _NOTHING)
        try:
            return fits(
                device,
                candidate.driver,
                request.capacity,
                allocated,
                allocating,
                self.owner.features.fractional_capacity_range,
            )
        except CapacityConflict:
            return None

    def _capacity_in_use(self, device_id: str) -> bool:
        return device_id in self.owner.allocated.capacity or bool(
            self.allocating_shares.get(device_id)
        )

    def allocating_for_claim(self, device_id: str, claim_i: int) -> bool:
        return claim_i in self.allocating.get(device_id, ())

    def is_selectable(self, key: RequestKey, data: RequestData, candidate: Candidate) -> bool:
        device = candidate.device
        features = self.owner.features
        if not features.device_binding and device.binding_conditions:
            return False
        memo = (key, candidate.id)
        found = self.selectable.get(memo)
        if found is not None:
            return found
        claim = self.claims[key[0]]
        result = True
        if data.device_class is not None:
            where = f"class {data.device_class.metadata.name}"
            result = self._selectors_match(where, data.device_class.spec.selectors, candidate)
        if result:
            result = self._selectors_match(
                f"claim {kobj(claim)}", data.request.selectors, candidate
            )
        if result and candidate.slice.spec.per_device_node_selection:
            try:
                result = node_matches(
                    self.node,
                    device.node_name or "",
                    bool(device.all_nodes),
                    device.node_selector,
                )
            except ValueError as err:
                raise AllocationError(str(err)) from None
        self.selectable[memo] = result
        return result

    def _selectors_match(self, where: str, selectors: Sequence[object], c: Candidate) -> bool:
        for i, selector in enumerate(selectors):
            cel = getattr(selector, "cel", None)
            expression = "" if cel is None else cel.expression
            if not self.owner.selector_matches(expression, c, where, i):
                return False
        return True

    def allocate_device(
        self, claim_i: int, key: RequestKey, candidate: Candidate, must: bool
    ) -> Callable[[], None] | None:
        """Pick ``candidate`` for the request; the undo, or None if it cannot be."""
        data = self.request_data[key]
        request = data.request
        features = self.owner.features
        device = candidate.device
        shared = features.consumable_capacity and bool(device.allow_multiple_allocations)
        if request.admin_access:
            if not shared and self.allocating_for_claim(candidate.id, claim_i):
                return None
        elif self.in_use(candidate.id):
            return None
        if device.consumes_counters and not features.partitionable_devices:
            return None
        consumed: ConsumedCapacity | None = None
        if features.consumable_capacity:
            consumed = self.capacity_fits(request, candidate)
            if consumed is None:
                return None
        # A shared device already in use has had its counters taken by that use.
        counted = bool(device.consumes_counters) and not (
            shared and self._capacity_in_use(candidate.id)
        )
        if counted and not self._take_counters(candidate):
            return None
        if features.device_taints and taint_prevents_allocation(device.taints, request.tolerations):
            if counted:
                self._return_counters(candidate)
            return None
        base = data.parent if data.parent is not None else request.name
        sub = request.name if data.parent is not None else ""
        constraints = self.constraints[claim_i]
        for i, constraint in enumerate(constraints):
            if not constraint.add(base, sub, candidate):
                if must:
                    raise AllocationError(
                        f"claim {kobj(self.claims[claim_i])}, request {request.name}: cannot "
                        f"add device {candidate.id} because a claim constraint would not be "
                        "satisfied"
                    )
                for earlier in constraints[:i]:
                    earlier.remove(base, sub, candidate)
                if counted:
                    self._return_counters(candidate)
                return None
        share: str | None = None
        status: dict[str, Quantity] | None = None
        if shared:
            assert consumed is not None
            share = str(uuid.uuid4())
            status = status_names(device, candidate.driver, consumed) or None
            self._add_allocating(candidate.id, consumed, 1)
        else:
            self.allocating.setdefault(candidate.id, set()).add(claim_i)
        results = self.results[claim_i]
        results.append(
            Picked(
                request.name,
                data.parent,
                candidate,
                request.admin_access,
                request,
                share,
                status,
            )
        )
        size = len(results) - 1

        def undo() -> None:
            for constraint in constraints:
                constraint.remove(base, sub, candidate)
            if shared:
                assert consumed is not None
                self._add_allocating(candidate.id, consumed, -1)
            else:
                self.allocating[candidate.id].discard(claim_i)
            if counted:
                self._return_counters(candidate)
            del results[size:]

        return undo

    def _add_allocating(self, device_id: str, consumed: ConsumedCapacity, sign: int) -> None:
        count = self.allocating_shares.get(device_id, 0) + sign
        totals = self.allocating_capacity.setdefault(device_id, {})
        for name, value in consumed.items():
            totals[name] = totals.get(name, Fraction(0)) + sign * value
        if count <= 0:
            self.allocating_shares.pop(device_id, None)
            self.allocating_capacity.pop(device_id, None)
        else:
            self.allocating_shares[device_id] = count

    def _available(self, pool: Pool) -> Counters:
        """The pool's counters minus what allocated devices consume, once per allocator."""
        cache = self.owner.available_counters
        found = cache.get(pool.pool_id)
        if found is not None:
            return found
        available: Counters = {
            name: {c: parse_quantity(v.value) for c, v in cs.counters.items()}
            for name, cs in pool.counter_sets.items()
        }
        for s in (*pool.slices, *pool.other_slices):
            for device in s.spec.devices:
                taken = f"{s.spec.driver}/{s.spec.pool.name}/{device.name}"
                if not self.owner.allocated.is_allocated(taken):
                    continue
                for use in device.consumes_counters:
                    counters = available.get(use.counter_set, {})
                    for name, amount in use.counters.items():
                        if name in counters:
                            counters[name] -= parse_quantity(amount.value)
        cache[pool.pool_id] = available
        return available

    def _take_counters(self, candidate: Candidate) -> bool:
        pool = next(
            p for p in self.pools if p.driver == candidate.driver and p.name == candidate.pool
        )
        available = self._available(pool)
        consumed = self.consumed.setdefault(pool.pool_id, {})
        for use in candidate.device.consumes_counters:
            counters = consumed.setdefault(use.counter_set, {})
            for name, amount in use.counters.items():
                counters[name] = counters.get(name, Fraction(0)) + parse_quantity(amount.value)
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, value in counters.items():
                if value < used.get(name, 0):
                    self._return_counters(candidate)
                    return False
        return True

    def _return_counters(self, candidate: Candidate) -> None:
        consumed = self.consumed[f"{candidate.driver}/{candidate.pool}"]
        for use in candidate.device.consumes_counters:
            counters = consumed[use.counter_set]
            for name, amount in use.counters.items():
                counters[name] -= parse_quantity(amount.value)


def prepare(
    owner: Allocator, node: Node, claims: Sequence[ResourceClaim], pools: list[Pool]
) -> SearchState:
    """Check every request and build the search's state; raises AllocationError."""
    state = SearchState(owner, node, claims, pools)
    for claim_i, claim in enumerate(claims):
        min_devices = 0
        for request_i, request in enumerate(claim.spec.devices.requests):
            if request.first_available and not owner.features.prioritized_list:
                raise AllocationError(
                    f"claim {kobj(claim)}, request {request.name}: has subrequests, but "
                    "the DRAPrioritizedList feature is disabled"
                )
            _check_capacity_requests(owner.features.consumable_capacity, claim, request)
            if request.first_available:
                least = None
                for sub_i, sub in enumerate(request.first_available):
                    data = _validate(
                        state, claim_i, (claim_i, request_i, sub_i), sub_view(sub), request.name
                    )
                    state.request_data[(claim_i, request_i, sub_i)] = data
                    least = data.num_devices if least is None else min(least, data.num_devices)
                min_devices += least or 0
            else:
                if request.exactly is None:
                    raise AllocationError(
                        f"claim {kobj(claim)}, request {request.name}: missing device class "
                        "name (unsupported request type?)"
                    )
                data = _validate(state, claim_i, (claim_i, request_i, 0), exact_view(request), None)
                state.request_data[(claim_i, request_i, 0)] = data
                min_devices += data.num_devices
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {kobj(claim)}: number of requested devices {min_devices} exceeds the "
                f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        state.results.append([])
        state.constraints.append(_constraints(state, claim))
    return state


def _check_capacity_requests(enabled: bool, claim: ResourceClaim, request: DeviceRequest) -> None:
    """Capacity requests need DRAConsumableCapacity (upstream's messages)."""
    if enabled:
        return
    found = [
        (kind, name)
        for kind, name, capacity in (
            ("request", request.name, request.exactly.capacity if request.exactly else None),
            *(("subrequest", sub.name, sub.capacity) for sub in request.first_available),
        )
        if capacity is not None
    ]
    if not found:
        return
    kind, name = found[0]
    raise AllocationError(
        f"claim {kobj(claim)}, {kind} {name}: has capacity requests, but the "
        "DRAConsumableCapacity feature is disabled"
    )


def _constraints(state: SearchState, claim: ResourceClaim) -> list[Constraint]:
    built: list[Constraint] = []
    for i, constraint in enumerate(claim.spec.devices.constraints):
        names = frozenset(constraint.requests)
        if constraint.match_attribute is not None:
            built.append(MatchAttribute(names, constraint.match_attribute))
        elif constraint.distinct_attribute is not None and state.owner.features.consumable_capacity:
            built.append(DistinctAttribute(names, constraint.distinct_attribute))
        else:
            raise AllocationError(
                f"claim {kobj(claim)}, constraint #{i}: empty constraint (unsupported "
                "constraint type?)"
            )
    return built


def _validate(
    state: SearchState, claim_i: int, key: RequestKey, request: RequestView, parent: str | None
) -> RequestData:
    claim = state.claims[claim_i]
    owner = state.owner
    data = RequestData(request, parent)
    where = f"claim {kobj(claim)}, request {request.name}"
    for i, selector in enumerate(request.selectors):
        if selector.cel is None:
            raise AllocationError(
                f"{where}, selector #{i}: CEL expression empty (unsupported selector type?)"
            )
    if not owner.features.admin_access and request.has_admin_access:
        raise AllocationError(f"{where}: admin access is requested, but the feature is disabled")
    if not request.device_class_name:
        raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
    device_class = owner.classes.get(request.device_class_name)
    if device_class is None:
        raise AllocationError(
            f"{where}: could not retrieve device class {request.device_class_name}: "
            f'deviceclass.resource.k8s.io "{request.device_class_name}" not found'
        )
    data.device_class = device_class
    if request.allocation_mode == "ExactCount":
        data.num_devices = request.count
    elif request.allocation_mode == "All":
        consumable = owner.features.consumable_capacity
        for pool in state.pools:
            if pool.incomplete:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool.pool_id} is "
                    "currently being updated"
                )
            if pool.invalid:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool.pool_id} is "
                    "currently invalid"
                )
            for candidate in pool.candidates():
                if not state.is_selectable(key, data, candidate):
                    continue
                if consumable and state.capacity_fits(request, candidate) is None:
                    continue
                data.all_devices.append(candidate)
        data.num_devices = len(data.all_devices)
    else:
        raise AllocationError(f"{where}: unsupported count mode {request.allocation_mode}")
    return data
