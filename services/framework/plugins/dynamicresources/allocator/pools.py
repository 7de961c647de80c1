"""Resource pools as the allocator sees them from one node (upstream's
``GatherPools``, the incubating variant that knows shared counters).

A pool is the set of slices of one driver and pool name at the newest generation. It
is complete when all of its ``resourceSliceCount`` slices are there, invalid when a
device name repeats or counters are inconsistent. A slice is relevant to a node by
``nodeName``, ``allNodes`` or ``nodeSelector``, or per device
(``perDeviceNodeSelection``); slices with shared counters are always included.

:class:`SliceIndex` is built once per set of slices: slices by node name, the others,
and all slices by pool, so gathering for a node only looks at the slices that can
concern it. Pools come in the order their first slice appears (upstream's order comes
from a Go map and is not defined).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from contracts.k8s import Node, NodeSelector
from contracts.k8s.resource import CounterSet, Device, ResourceSlice
from services.common.k8s.nodeaffinity import Term, compile_terms, terms_match
from services.framework.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocatorFeatures,
)
from services.framework.plugins.dynamicresources.allocator.requests import Candidate

PoolID = tuple[str, str]


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[ResourceSlice] = field(default_factory=list)
    """Slices with devices, relevant to the node (``DeviceSlicesTargetingNode``)."""
    other_slices: list[ResourceSlice] = field(default_factory=list)
    """The pool's other device slices (``DeviceSlicesNotTargetingNode``): their
    allocated devices consume counters too."""
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)
    _candidates: list[Candidate] | None = None

    def candidates(self) -> list[Candidate]:
        """The devices of :attr:`slices`, in order, made once."""
        if self._candidates is None:
            self._candidates = [
                Candidate(f"{self.driver}/{self.name}/{d.name}", self.driver, self.name, i, s)
                for s in self.slices
                for i, d in enumerate(s.spec.devices)
            ]
        return self._candidates

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


_selectors: dict[int, tuple[NodeSelector, tuple[Term, ...]]] = {}


def _compiled(selector: NodeSelector) -> tuple[Term, ...]:
    found = _selectors.get(id(selector))
    if found is not None and found[0] is selector:
        return found[1]
    if len(_selectors) > 10_000:
        _selectors.clear()
    terms = compile_terms(selector.node_selector_terms, "nodeSelectorTerms")
    for term in terms:
        if term.errors:
            raise ValueError(f"failed to parse node selector: {term.errors[0]}")
    _selectors[id(selector)] = (selector, terms)
    return terms


def node_matches(
    node: Node, node_name: str, all_nodes: bool, selector: NodeSelector | None
) -> bool:
    """``NodeMatches``; raises ValueError for a selector that does not parse."""
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return terms_match(_compiled(selector), node)
    return False


class SliceIndex:
    """The slices, indexed once for many nodes."""

    def __init__(self, slices: Sequence[ResourceSlice]) -> None:
        self.slices = list(slices)
        self.by_node: dict[str, list[int]] = {}
        self.others: list[int] = []
        self.by_pool: dict[PoolID, list[ResourceSlice]] = {}
        for i, s in enumerate(self.slices):
            spec = s.spec
            if spec.node_name and not spec.shared_counters:
                self.by_node.setdefault(spec.node_name, []).append(i)
            else:
                self.others.append(i)
            self.by_pool.setdefault((spec.driver, spec.pool.name), []).append(s)

    def candidates(self, node_name: str) -> list[ResourceSlice]:
        """The slices that can concern ``node_name``, in their original order."""
        local = self.by_node.get(node_name, [])
        if not local:
            return [self.slices[i] for i in self.others]
        return [self.slices[i] for i in sorted(local + self.others)]


def gather_pools(index: SliceIndex, node: Node, features: AllocatorFeatures) -> list[Pool]:
    pools: dict[PoolID, list[ResourceSlice]] = {}
    for s in index.candidates(node.metadata.name):
        spec = s.spec
        if not features.partitionable_devices and (
            spec.per_device_node_selection is not None or spec.shared_counters
        ):
            continue
        if spec.shared_counters:
            _add_slice(pools, s)
        elif spec.node_name or spec.all_nodes or spec.node_selector is not None:
            try:
                match = node_matches(
                    node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector
                )
            except ValueError as err:
                raise AllocationError(
                    f"gather pool information: failed to perform node selection for slice "
                    f"{s.metadata.name}: {err}"
                ) from None
            if match:
                _add_slice(pools, s)
        elif spec.per_device_node_selection:
            for device in spec.devices:
                try:
                    match = _device_matches_node(node, device)
                except ValueError as err:
                    raise AllocationError(
                        f"gather pool information: failed to perform node selection for "
                        f"device {device.name} in slice {s.metadata.name}: {err}"
                    ) from None
                if match:
                    _add_slice(pools, s)
                    break
    result: list[Pool] = []
    for (driver, name), found in pools.items():
        count = found[0].spec.pool.resource_slice_count
        if len(found) == count:
            result.append(_build_pool(driver, name, found, features, None))
            continue
        generation = found[0].spec.pool.generation
        all_slices: list[ResourceSlice] = []
        obsolete = False
        for s in index.by_pool.get((driver, name), []):
            if s.spec.pool.generation == generation:
                all_slices.append(s)
            elif s.spec.pool.generation > generation:
                obsolete = True
                break
        if obsolete:
            continue
        if len(all_slices) != count:
            result.append(Pool(driver, name, incomplete=True))
            continue
        result.append(_build_pool(driver, name, found, features, all_slices))
    return result


def _device_matches_node(node: Node, device: Device) -> bool:
    return node_matches(node, device.node_name or "", bool(device.all_nodes), device.node_selector)


def _add_slice(pools: dict[PoolID, list[ResourceSlice]], s: ResourceSlice) -> None:
    key = (s.spec.driver, s.spec.pool.name)
    found = pools.get(key)
    if found is None or s.spec.pool.generation > found[0].spec.pool.generation:
        pools[key] = [s]
    elif s.spec.pool.generation == found[0].spec.pool.generation:
        found.append(s)


def _build_pool(
    driver: str,
    name: str,
    slices: list[ResourceSlice],
    features: AllocatorFeatures,
    all_slices: list[ResourceSlice] | None,
) -> Pool:
    if features.partitionable_devices:
        device_slices = [s for s in slices if not s.spec.shared_counters]
        counter_slices = [s for s in slices if s.spec.shared_counters]
    else:
        device_slices, counter_slices = slices, []
    reason = _duplicate_device(device_slices)
    if reason:
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    if not features.partitionable_devices:
        return Pool(driver, name, slices=device_slices)
    counter_sets: dict[str, CounterSet] = {}
    for s in counter_slices:
        for counter_set in s.spec.shared_counters:
            if counter_set.name in counter_sets:
                return Pool(
                    driver,
                    name,
                    invalid=True,
                    invalid_reason=f"duplicate counter set name {counter_set.name}",
                )
            counter_sets[counter_set.name] = counter_set
    reason = _bad_consumption(counter_sets, slices)
    if reason:
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    if all_slices is None or len(slices) == len(all_slices):
        return Pool(driver, name, slices=device_slices, counter_sets=counter_sets)
    seen = {id(s) for s in slices}
    others = [s for s in all_slices if id(s) not in seen]
    reason = _bad_consumption(counter_sets, others)
    if reason:
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    return Pool(driver, name, slices=device_slices, other_slices=others, counter_sets=counter_sets)


def _duplicate_device(slices: list[ResourceSlice]) -> str:
    names: set[str] = set()
    for s in slices:
        for device in s.spec.devices:
            if device.name in names:
                return f"duplicate device name {device.name}"
            names.add(device.name)
    return ""


def _bad_consumption(counter_sets: dict[str, CounterSet], slices: list[ResourceSlice]) -> str:
    for s in slices:
        for device in s.spec.devices:
            for consumption in device.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for counter in consumption.counters:
                    if counter not in counter_set.counters:
                        return f"counter {counter} not found in counter set {counter_set.name}"
    return ""
