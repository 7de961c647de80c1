"""What DynamicResources keeps for one scheduling attempt (upstream's ``stateData``),
and the PreFilter facts Filter relies on: which nodes any ResourceSlice may serve."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from contracts.k8s import DeviceClass, Node, Pod, ResourceSlice
from contracts.k8s.resource import (
    EXTENDED_RESOURCE_CLAIM_POD_NAME,
    AllocationResult,
    ResourceClaim,
)
from services.common.k8s.nodeaffinity import Term
from services.framework.api.types import pod_uid
from services.framework.plugins.dynamicresources import binding, extended
from services.framework.plugins.dynamicresources.allocator.allocated import AllocatedState
from services.framework.plugins.dynamicresources.claims import claim_uid, is_reserved_for_pod
from services.framework.plugins.dynamicresources.extended import ExtendedClaim
from services.framework.plugins.dynamicresources.inflight import InFlightAllocations
from services.framework.plugins.dynamicresources.memo import signature


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
    extended: ExtendedClaim | None = None
    """The pod's extended-resource claim, last of :attr:`claims` (DRAExtendedResource)."""

    def clone(self) -> StateData:
        return self

    def add_extended(self, extended: ExtendedClaim | None, in_flight: InFlightAllocations) -> None:
        """End the pod's claims with its extended-resource claim (None: it has none).
        Its uid is the pod's every attempt: an allocation in flight from this pod's
        earlier attempt is dropped (upstream's claim gets a new uid per attempt)."""
        if extended is None:
            return
        if self.pod is not None:
            in_flight.remove(claim_uid(extended.claim), pod_uid(self.pod))
        extended.users = len(self.claims)
        self.extended = extended
        self.claims.append(extended.claim)
        self.names.append(EXTENDED_RESOURCE_CLAIM_POD_NAME)

    def settle(self, node: str) -> None:
        """Reserve on ``node``: the extended-resource claim becomes the variant Filter
        made for the node, or leaves the pod's claims when the node needs none."""
        extended = self.extended
        if extended is None:
            return
        users = extended.users
        del self.claims[users:], self.names[users:], self.available_on[users:]
        extended.chosen = extended.nodes.get(node)
        if extended.chosen is not None:
            self.claims.append(extended.chosen.claim)
            self.names.append(EXTENDED_RESOURCE_CLAIM_POD_NAME)
            self.available_on.append(None)  # unallocated (Filter rejects one allocated)

    def claims_on(
        self, node: Node, to_allocate: list[ResourceClaim]
    ) -> tuple[list[ResourceClaim], bytes] | None:
        """Filter on ``node``: the claims to allocate there and their memo key; None:
        nothing to do there. With an extended-resource claim, that claim as the node
        must serve it (:func:`.extended.for_node`, which may raise
        :class:`.extended.NodeRejected`)."""
        if self.extended is None or self.pod is None:
            return to_allocate, self.memo_key
        node_claim = extended.for_node(self.extended, self.pod, node)
        self.extended.nodes[node.metadata.name] = node_claim
        if node_claim is None and self.extended.users == 0:
            return None
        claims = list(to_allocate)
        if claims and claims[-1] is self.extended.claim:
            claims.pop()
        delegated: frozenset[str] = frozenset()  # no variant: the pod's own claims
        if node_claim is not None:
            claims.append(node_claim.claim)
            delegated = node_claim.delegated
        signatures = self.extended.signatures
        key = signatures.get(delegated)
        if key is None:
            key = signatures[delegated] = signature(claims)
        return claims, key

    def scored_claims(self, node: str) -> list[ResourceClaim]:
        """The claims Filter's allocations for ``node`` go with, in order: without the
        extended-resource claim where the node needs none."""
        extended = self.extended
        if extended is None or extended.nodes.get(node) is not None:
            return self.claims
        return self.claims[: extended.users]

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
        if not pending:
            return None
        status = self.extended.status() if self.extended is not None else None
        return binding.PendingClaims(claims=pending, extended_resource_claim_status=status)


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
