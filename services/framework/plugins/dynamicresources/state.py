"""What DynamicResources keeps for one scheduling attempt (upstream's ``stateData``),
and the PreFilter facts Filter relies on: which nodes any ResourceSlice may serve."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from contracts.k8s import DeviceClass, Node, Pod, ResourceSlice
from contracts.k8s.resource import AllocationResult, ResourceClaim
from services.common.k8s.nodeaffinity import Term
from services.framework.plugins.dynamicresources import binding
from services.framework.plugins.dynamicresources.allocator.allocated import AllocatedState
from services.framework.plugins.dynamicresources.claims import is_reserved_for_pod


class Allocating(Protocol):
    """What the plugin needs of the allocator (:mod:`.allocator`)."""

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim]
    ) -> list[AllocationResult] | None: ...


AllocatorFactory = Callable[
    [AllocatedState, Mapping[str, DeviceClass], list[ResourceSlice]], Allocating
]
"""``(what allocated claims hold, classes by name, slices) -> allocator`` for one pod."""


@dataclass(slots=True)
class StateData:
    """What DynamicResources keeps for one attempt; shared by clones, as upstream's
    pointer."""

    pod: Pod | None = None
    claims: list[ResourceClaim] = field(default_factory=list)
    """The pod's claims in spec order (empty: nothing to do)."""
    names: list[str] = field(default_factory=list)
    """``spec.resourceClaims[].name`` of each claim."""
    available_on: list[tuple[Term, ...] | None] = field(default_factory=list)
    """Per claim: its allocation's node selector (None: unallocated or any node)."""
    unready: list[int] = field(default_factory=list)
    """Allocated claims whose binding conditions failed or timed out."""
    allocator: Allocating | None = None
    """Set when some claim needs allocating."""
    memo_key: bytes = b""
    """The claims to allocate, as the memo of Filter's answers keys them."""
    servable: frozenset[str] | None = None
    """Nodes some ResourceSlice may serve (None: possibly any); only set when every
    claim to allocate asks for a device, so that no slice means no fit."""
    unavailable: set[int] = field(default_factory=set)
    """Indices of allocated claims unavailable on some node (PostFilter's input)."""
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    """Filter's allocations, per node, for the claims to allocate in order."""
    allocations: dict[int, AllocationResult] = field(default_factory=dict)
    """Set by Reserve: claim index → the allocation chosen for it."""

    def clone(self) -> StateData:
        return self

    def to_allocate(self) -> list[int]:
        return [i for i, claim in enumerate(self.claims) if claim.status.allocation is None]

    def pending(self) -> binding.PendingClaims | None:
        """The claims PreBind must reserve for the pod (allocating those Reserve
        allocated); None when there are none."""
        pending = [
            binding.PendingClaim(claim=claim, allocation=self.allocations.get(index))
            for index, claim in enumerate(self.claims)
            if self.pod is None or not is_reserved_for_pod(self.pod, claim)
        ]
        return binding.PendingClaims(claims=pending) if pending else None


def asks_for_devices(claim: ResourceClaim) -> bool:
    return bool(claim.spec.devices.requests)


def servable_nodes(slices: Sequence[ResourceSlice]) -> frozenset[str] | None:
    """The nodes of node-local slices; None when a slice may serve other nodes too
    (``allNodes``, a node selector, or per-device node selection)."""
    nodes: set[str] = set()
    for resource_slice in slices:
        spec = resource_slice.spec
        if not spec.devices:
            continue
        if spec.node_name is None or spec.all_nodes or spec.node_selector is not None:
            return None
        if spec.per_device_node_selection:
            return None
        nodes.add(spec.node_name)
    return frozenset(nodes)
