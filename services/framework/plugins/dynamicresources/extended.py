"""Extended resources backed by DRA (DRAExtendedResource), upstream's
``extendeddynamicresources.go``: a pod asking ``example.com/gpu: 1`` where a
DeviceClass serves ``example.com/gpu`` (:mod:`services.common.k8s.extendedresources`)
and the node does not offer it gets a device of that class through one ResourceClaim
the scheduler makes for the pod, the extended-resource claim::

    PreFilter: the pod's claim from an earlier cycle (annotated, controlled by the pod),
               else a new one in memory, no requests yet ─┐
    Filter:    per node, the requests the node must serve by DRA (NodeClaim), allocated
               with the pod's other claims; none needed: nothing to allocate there
    Reserve:   the chosen node's variant replaces it (:func:`settle`)
    PreBind:   the claim, allocated and reserved for the pod (``claim.<namespace>``),
               then the pod's ``status.extendedResourceClaimStatus`` (``status.<ns>``)

Where ksched differs: upstream names the claim in memory ``<extended-resources>`` and
lets the API server generate its name at PreBind (``<pod>-extended-resources-`` and 5
random characters). ksched has no API server to ask, so the scheduler names it at
PreFilter, the 5 characters drawn from the pod's uid, and gives it a uid derived from
the pod's: every attempt, replica and replay of the pod names the same claim, and the
allocation in flight is recognised when the created claim comes back through the log.
A node on which no DRA-backed resource is needed allocates no claim (upstream builds
an empty one there when the pod also has claims of its own, which its PreBind then
refuses for want of request mappings).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

import msgspec

from contracts.k8s import (
    ContainerExtendedResourceRequest,
    DeviceClass,
    Node,
    OwnerReference,
    Pod,
    PodExtendedResourceClaimStatus,
    Quantity,
)
from contracts.k8s.base import ObjectMeta
from contracts.k8s.resource import (
    ALLOCATION_MODE_EXACT_COUNT,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    DeviceClaim,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from contracts.podstatus import PodStatusPatch
from contracts.quantity import QuantityError, parse_quantity
from services.common import features
from services.common.k8s.extendedresources import backed_by_dra, is_dra_extended_resource_name
from services.common.resources import is_scalar_resource_name, node_allocatable
from services.framework.api.effects import Effect, PodStatusEffect
from services.framework.api.listers import Listers
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo, pod_uid
from services.framework.plugins.dynamicresources.allocator import AllocationFailedOnNode
from services.framework.plugins.dynamicresources.binding import PendingClaims

ERR_STALE_CLAIM: Final = "cannot schedule extended resource claim"
ERR_CANNOT_FIT: Final = "cannot fit resource"
NAME_SUFFIX: Final = "-extended-resources-"
MAX_GENERATED_NAME_LENGTH: Final = 58
"""``names.MaxGeneratedNameLength``: the API server cuts a longer generateName."""
_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
"""``utilrand.String``'s alphabet, as the API server's name generator uses it."""


class NodeRejected(AllocationFailedOnNode):
    """The node cannot serve the pod's extended resources (Filter's reason for it)."""


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """The extended-resource claim as one node must serve it."""

    claim: ResourceClaim
    mappings: tuple[ContainerExtendedResourceRequest, ...]
    delegated: frozenset[str] = frozenset()
    """The resources DRA serves on the nodes this variant is for."""


@dataclass(slots=True)
class ExtendedClaim:
    """DynamicResources' state for the pod's extended-resource claim (upstream's
    ``draExtendedResource`` and the claim store's last entry)."""

    claim: ResourceClaim
    """As PreFilter found or made it (the pod's claims end with it)."""
    scalar: Mapping[str, int]
    """The pod's scalar requests (``podScalarResources``)."""
    classes: Mapping[str, DeviceClass]
    """Extended resource name → DeviceClass, at PreFilter."""
    users: int = 0
    """How many of the pod's claims come before it (its own)."""
    nodes: dict[str, NodeClaim | None] = field(default_factory=dict)
    """Filter's variant per node (None: nothing to allocate there)."""
    variants: dict[frozenset[str], NodeClaim] = field(default_factory=dict)
    """The variant per set of resources DRA serves on a node: the nodes lacking the same
    resources share one claim (its requests and its memo key are built once)."""
    signatures: dict[frozenset[str], bytes] = field(default_factory=dict)
    """Filter's memo key of the pod's claims with each variant (by its ``delegated``;
    the empty set: the pod's own claims alone, on nodes that need no variant)."""
    chosen: NodeClaim | None = None
    """Reserve's node's variant."""

    def status(self) -> PodExtendedResourceClaimStatus | None:
        """What PreBind writes to the pod (None: no claim is made for the pod)."""
        if self.chosen is None:
            return None
        return PodExtendedResourceClaimStatus(
            request_mappings=list(self.chosen.mappings),
            resource_claim_name=self.chosen.claim.metadata.name,
        )


def pre_filter(pod: PodInfo, listers: Listers) -> ExtendedClaim | None:
    """``preFilterExtendedResources``: None unless the pod asks for an extended resource
    a DeviceClass serves."""
    if not features.enabled("DRAExtendedResource"):
        return None
    classes = listers.device_class_resolver()
    if not classes:
        return None
    requests = pod.requests
    if not any(
        amount > 0 and name in classes and is_dra_extended_resource_name(name)
        for name, amount in requests.items()
    ):
        return None
    scalar = {name: amount for name, amount in requests.items() if is_scalar_resource_name(name)}
    claim = find_claim(pod.pod, listers.resource_claims.values()) or new_claim(pod.pod)
    return ExtendedClaim(claim=claim, scalar=scalar, classes=classes)


def find_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """``findExtendedResourceClaim``: the claim annotated as the extended-resource claim
    and controlled by the pod."""
    meta = pod.metadata
    for claim in claims:
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for owner in claim.metadata.owner_references:
            if owner.name == meta.name and owner.controller and owner.uid == pod_uid(pod):
                return claim
    return None


def claim_name(pod: Pod) -> str:
    """``<pod>-extended-resources-`` (cut at 58 characters) and 5 characters of the
    API server's alphabet drawn from the pod's uid."""
    base = (pod.metadata.name + NAME_SUFFIX)[:MAX_GENERATED_NAME_LENGTH]
    digest = hashlib.sha256(pod_uid(pod).encode()).digest()
    return base + "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:5])


def new_claim(pod: Pod) -> ResourceClaim:
    """The pod's extended-resource claim, in memory: controlled by the pod, annotated,
    no requests yet."""
    meta = pod.metadata
    owner = OwnerReference(
        api_version="v1", kind="Pod", name=meta.name, uid=pod_uid(pod), controller=True
    )
    return ResourceClaim(
        metadata=ObjectMeta(
            name=claim_name(pod),
            generate_name=meta.name + NAME_SUFFIX,
            namespace=meta.namespace,
            uid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"ksched:extended-resources:{pod_uid(pod)}")),
            owner_references=[owner],
            annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        )
    )


def for_node(state: ExtendedClaim, pod: Pod, node: Node) -> NodeClaim | None:
    """``filterExtendedResources``: the claim as ``node`` must serve it (None: the node
    offers every resource itself). Raises :class:`NodeRejected`."""
    claim = state.claim
    if claim.spec.devices.requests:
        # Made in an earlier cycle that did not bind the pod: not to be reused.
        raise NodeRejected(ERR_STALE_CLAIM)
    allocatable = node_allocatable(node)
    by_dra: dict[str, int] = {}
    for name, amount in state.scalar.items():
        if amount == 0 or not is_dra_extended_resource_name(name):
            continue
        if backed_by_dra(name, state.classes, allocatable):
            by_dra[name] = amount
        elif name not in allocatable:
            raise NodeRejected(ERR_CANNOT_FIT)
    if not by_dra or claim.status.allocation is not None:
        return None
    key = frozenset(by_dra)  # the amounts are the pod's: the names decide the variant
    variant = state.variants.get(key)
    if variant is None:
        requests, mappings = requests_and_mappings(pod, by_dra, state.classes)
        spec = ResourceClaimSpec(devices=DeviceClaim(requests=requests))
        variant = NodeClaim(msgspec.structs.replace(claim, spec=spec), tuple(mappings), key)
        state.variants[key] = variant
    return variant


def _count(quantity: Quantity | None) -> int:
    """A container's request as a whole number (``AsInt64``; 0 when it is not one)."""
    if quantity is None:
        return 0
    try:
        value = parse_quantity(quantity)
    except QuantityError:
        return 0
    return int(value) if value.denominator == 1 else 0


def _container_request(
    index: int,
    container_name: str,
    requests: Mapping[str, Quantity],
    resource: str,
    class_name: str,
    reusable: Iterable[DeviceRequest | None],
) -> tuple[DeviceRequest | None, list[ContainerExtendedResourceRequest]]:
    """``createResourceRequestAndMappings``: the request a container needs for
    ``resource`` beyond the ``reusable`` ones (those of the long-lived containers after
    it, for an init container), and its mappings."""
    wanted = _count(requests.get(resource))
    if wanted == 0:
        return None, []
    mappings: list[ContainerExtendedResourceRequest] = []
    covered = 0
    for other in reusable:
        if other is None or other.exactly is None:
            continue
        covered += other.exactly.count or 0
        mappings.append(_mapping(container_name, resource, other.name))
        if covered >= wanted:
            return None, mappings
    position = sorted(requests).index(resource)
    name = f"container-{index}-request-{position}"
    exactly = ExactDeviceRequest(
        device_class_name=class_name,
        allocation_mode=ALLOCATION_MODE_EXACT_COUNT,
        count=wanted - covered,
    )
    mappings.append(_mapping(container_name, resource, name))
    return DeviceRequest(name=name, exactly=exactly), mappings


def _wanted(request: DeviceRequest) -> int:
    return request.exactly.count or 0 if request.exactly is not None else 0


def _mapping(container: str, resource: str, request: str) -> ContainerExtendedResourceRequest:
    return ContainerExtendedResourceRequest(
        container_name=container, resource_name=resource, request_name=request
    )


def requests_and_mappings(
    pod: Pod, by_dra: Mapping[str, int], classes: Mapping[str, DeviceClass]
) -> tuple[list[DeviceRequest], list[ContainerExtendedResourceRequest]]:
    """``createRequestsAndMappings``: one request per container (init containers, then
    containers, by index) and resource; the init containers that run before the others
    (not sidecars) share one request, the largest, after reusing what the long-lived
    containers after them ask for. Requests sorted by name."""
    spec = pod.spec
    containers = [*spec.init_containers, *spec.containers]
    inits = len(spec.init_containers)
    short_lived = [
        i
        for i, c in enumerate(containers)
        if i < inits and c.restart_policy != "Always"  # a sidecar lives with the pod
    ]
    long_lived = [i for i in range(len(containers)) if i not in short_lived]
    requests: list[DeviceRequest] = []
    mappings: list[ContainerExtendedResourceRequest] = []
    for resource in sorted(by_dra):
        device_class = classes.get(resource)
        if device_class is None:
            continue
        class_name = device_class.metadata.name
        own: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[ContainerExtendedResourceRequest] = []
        for i in long_lived:
            c = containers[i]
            own[i], found = _container_request(
                i, c.name, c.resources.requests, resource, class_name, ()
            )
            long_mappings += found
        largest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for i in short_lived:
            c = containers[i]
            request, found = _container_request(
                i, c.name, c.resources.requests, resource, class_name, own[i:]
            )
            if request is not None and request.exactly is not None:
                short_names.add(request.name)
                if largest is None or _wanted(largest) < _wanted(request):
                    largest = request
            short_mappings += found
        if largest is not None:
            if len(short_names) > 1:
                short_names.discard(largest.name)
                short_mappings = [
                    msgspec.structs.replace(m, request_name=largest.name)
                    if m.request_name in short_names
                    else m
                    for m in short_mappings
                ]
            requests.append(largest)
        requests += [r for r in own if r is not None]
        mappings += long_mappings + short_mappings
    requests.sort(key=lambda r: r.name)
    return requests, mappings


def status_patch(pod: Pod, status: PodExtendedResourceClaimStatus, profile: str) -> PodStatusPatch:
    """The pod's ``status.extendedResourceClaimStatus``, as PreBind patches it."""
    meta = pod.metadata
    return PodStatusPatch(
        namespace=meta.namespace or "default",
        name=meta.name,
        uid=pod_uid(pod),
        plugin="DynamicResources",
        scheduler_name=profile,
        extended_resource_claim_status=status,
    )


def publish_status(pending: PendingClaims, pod: Pod, effects: list[Effect]) -> Status:
    """PreBind, after the claims: the pod's ``status.extendedResourceClaimStatus`` when
    its extended-resource claim is created (``patchPodExtendedResourceClaimStatus``)."""
    status = pending.extended_resource_claim_status
    if status is None:
        return SUCCESS
    if not status.request_mappings:
        meta = pod.metadata
        return Status(
            Code.Error,
            (
                "nil or empty request mappings, no update of pod "
                f"{meta.namespace or 'default'}/{meta.name} ExtendedResourceClaimStatus",
            ),
        )
    effects.append(PodStatusEffect(status_patch(pod, status, pod.spec.scheduler_name)))
    return SUCCESS
