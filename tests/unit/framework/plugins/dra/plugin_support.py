"""Builders for DynamicResources' tests, named after upstream's test fixtures
(``st.MakeResourceClaim()``, ``st.MakeResourceSlice(node, driver)``, ``podWithClaimName``),
and a spy on the structured allocator."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from contracts.k8s import (
    DeviceClass,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodResourceClaim,
    PodResourceClaimStatus,
    ResourceClaim,
    ResourceSlice,
)
from contracts.k8s.resource import (
    AllocatedDeviceStatus,
    AllocationResult,
    CELDeviceSelector,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceClaim,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    ExactDeviceRequest,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourcePool,
    ResourceSliceSpec,
)
from contracts.k8s.resource import Device as SliceDevice
from services.framework.api.listers import Listers
from services.framework.plugins.dynamicresources.allocator import AllocatorFeatures
from services.framework.plugins.dynamicresources.allocator.allocated import AllocatedState
from services.framework.plugins.dynamicresources.allocator.cel import CELCache
from services.framework.plugins.dynamicresources.allocator.search import Allocator
from tests.builders import make_node, make_pod

NODE = "worker"
NODE2 = "worker-2"
NODE3 = "worker-3"
DRIVER = "some-driver"
POD_NAME = "my-pod"
POD_UID = "1234"
RESOURCE = "my-resource"
CLAIM_NAME = f"{POD_NAME}-{RESOURCE}"
CLASS = "my-resource-class"
NAMESPACE = "default"
HOSTNAME = "kubernetes.io/hostname"
BROKEN = 'device.attributes["some-driver"].healthy'
"""A selector upstream's CEL fails on for devices without the attribute."""


def worker(name: str = NODE) -> Node:
    return make_node(name, labels={HOSTNAME: name})


def device_class(name: str = CLASS) -> DeviceClass:
    return DeviceClass(metadata=ObjectMeta(name=name, uid=f"{name}-uid"))


def resource_slice(node: str, driver: str = DRIVER, *devices: str) -> ResourceSlice:
    """``st.MakeResourceSlice(node, driver).Device(...)``: pool named after the node."""
    return ResourceSlice(
        metadata=ObjectMeta(name=f"{node}-{driver}", uid=f"{node}-{driver}-uid"),
        spec=ResourceSliceSpec(
            driver=driver,
            node_name=node,
            pool=ResourcePool(name=node, resource_slice_count=1),
            devices=[SliceDevice(name=d) for d in devices or ("instance-1",)],
        ),
    )


def healthy(s: ResourceSlice, value: bool) -> ResourceSlice:
    """Every device of the slice with the ``healthy`` bool attribute (``attrName``)."""
    devices = [
        msgspec.structs.replace(d, attributes={"healthy": DeviceAttribute(bool_=value)})
        for d in s.spec.devices
    ]
    return msgspec.structs.replace(s, spec=msgspec.structs.replace(s.spec, devices=devices))


def tainted(s: ResourceSlice) -> ResourceSlice:
    """Upstream's ``taintDevices``: every device NoSchedule-tainted."""
    taint = DeviceTaint(key="taint-key", value="taint-value", effect="NoSchedule")
    devices = [msgspec.structs.replace(d, taints=[*d.taints, taint]) for d in s.spec.devices]
    return msgspec.structs.replace(s, spec=msgspec.structs.replace(s.spec, devices=devices))


def broken_class(c: DeviceClass) -> DeviceClass:
    """Upstream's ``breakCELInClass``."""
    selector = DeviceSelector(cel=CELDeviceSelector(expression=BROKEN))
    return msgspec.structs.replace(c, spec=msgspec.structs.replace(c.spec, selectors=[selector]))


def exactly(name: str = "req-1", class_name: str = CLASS, **fields: Any) -> DeviceRequest:
    return DeviceRequest(
        name=name, exactly=ExactDeviceRequest(device_class_name=class_name, **fields)
    )


def first_available(name: str, *subs: tuple[str, str, int]) -> DeviceRequest:
    """``RequestWithPrioritizedList(st.SubRequest(name, class, count), ...)``."""
    return DeviceRequest(
        name=name,
        first_available=[
            DeviceSubRequest(name=n, device_class_name=c, count=k) for n, c, k in subs
        ],
    )


def claim(
    name: str = CLAIM_NAME,
    *requests: DeviceRequest,
    owner: str | None = None,
    allocation: AllocationResult | None = None,
    reserved_for: Sequence[str] = (),
    deleted: bool = False,
    finalizers: Sequence[str] = (),
) -> ResourceClaim:
    """``st.MakeResourceClaim().Request(className)``; ``owner``: the pod uid that
    controls it (``pendingClaim``); ``reserved_for``: pod uids (named ``my-pod``)."""
    owners = [
        OwnerReference(
            api_version="v1", kind="Pod", name=POD_NAME, uid=owner or "", controller=True
        )
    ]
    return ResourceClaim(
        metadata=ObjectMeta(
            name=name,
            namespace=NAMESPACE,
            uid=f"{name}-uid",
            owner_references=owners if owner is not None else [],
            deletion_timestamp="2026-01-01T00:00:00Z" if deleted else None,
            finalizers=list(finalizers),
        ),
        spec=ResourceClaimSpec(devices=DeviceClaim(requests=list(requests) or [exactly()])),
        status=ResourceClaimStatus(
            allocation=allocation,
            reserved_for=[
                ResourceClaimConsumerReference(resource="pods", name=POD_NAME, uid=uid)
                for uid in reserved_for
            ],
        ),
    )


def on_node(node: str) -> NodeSelector:
    """``st.MakeNodeSelector().In("metadata.name", [node], MatchFields)``."""
    requirement = NodeSelectorRequirement(key="metadata.name", operator="In", values=[node])
    return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_fields=[requirement])])


def labelled(key: str, value: str) -> NodeSelector:
    requirement = NodeSelectorRequirement(key=key, operator="In", values=[value])
    return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_expressions=[requirement])])


def allocation(
    *results: tuple[str, str],
    node: str = NODE,
    driver: str = DRIVER,
    selector: NodeSelector | None = None,
    **fields: Any,
) -> AllocationResult:
    """``(request, device)`` pairs of ``driver``'s pool named ``node``."""
    return AllocationResult(
        devices=DeviceAllocationResult(
            results=[
                DeviceRequestAllocationResult(
                    request=request, driver=driver, pool=node, device=device, **fields
                )
                for request, device in results or (("req-1", "instance-1"),)
            ]
        ),
        node_selector=selector or on_node(node),
    )


ALLOCATION = allocation()
"""``allocationResult``: req-1 gets instance-1 of worker."""


def allocated(c: ResourceClaim, result: AllocationResult = ALLOCATION) -> ResourceClaim:
    return msgspec.structs.replace(c, status=msgspec.structs.replace(c.status, allocation=result))


def with_device_status(c: ResourceClaim, **conditions: str) -> ResourceClaim:
    """The claim's first allocated device reports ``conditions`` (type → status)."""
    assert c.status.allocation is not None
    first = c.status.allocation.devices.results[0]
    status = AllocatedDeviceStatus(
        driver=first.driver,
        pool=first.pool,
        device=first.device,
        conditions=[{"type": t, "status": s, "reason": "Test"} for t, s in conditions.items()],
    )
    return msgspec.structs.replace(c, status=msgspec.structs.replace(c.status, devices=[status]))


def admin_access(c: ResourceClaim) -> ResourceClaim:
    """Upstream's ``adminAccess(claim)``: every request and result with admin access."""
    requests = [
        msgspec.structs.replace(r, exactly=msgspec.structs.replace(r.exactly, admin_access=True))
        if r.exactly is not None
        else r
        for r in c.spec.devices.requests
    ]
    spec = ResourceClaimSpec(devices=msgspec.structs.replace(c.spec.devices, requests=requests))
    status = c.status
    if status.allocation is not None:
        results = [
            msgspec.structs.replace(r, admin_access=True) for r in status.allocation.devices.results
        ]
        devices = msgspec.structs.replace(status.allocation.devices, results=results)
        status = msgspec.structs.replace(
            status, allocation=msgspec.structs.replace(status.allocation, devices=devices)
        )
    return msgspec.structs.replace(c, spec=spec, status=status)


def broken_cel(c: ResourceClaim) -> ResourceClaim:
    """Upstream's ``breakCELInClaim``."""
    selector = DeviceSelector(cel=CELDeviceSelector(expression=BROKEN))
    requests = [
        msgspec.structs.replace(r, exactly=msgspec.structs.replace(r.exactly, selectors=[selector]))
        for r in c.spec.devices.requests
        if r.exactly is not None
    ]
    spec = ResourceClaimSpec(devices=msgspec.structs.replace(c.spec.devices, requests=requests))
    return msgspec.structs.replace(c, spec=spec)


def pod_with_claim_name(name: str = CLAIM_NAME, uid: str = POD_UID) -> Pod:
    """``podWithClaimName``."""
    pod = make_pod(POD_NAME, NAMESPACE, uid=uid)
    entry = PodResourceClaim(name=RESOURCE, resource_claim_name=name)
    return msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, resource_claims=[entry])
    )


def pod_with_two_claim_names() -> Pod:
    """``podWithTwoClaimNames``: my-resource → my-pod-my-resource, my-resource-2 →
    my-pod-my-resource-2."""
    pod = make_pod(POD_NAME, NAMESPACE, uid=POD_UID)
    entries = [
        PodResourceClaim(name=RESOURCE, resource_claim_name=CLAIM_NAME),
        PodResourceClaim(name=f"{RESOURCE}-2", resource_claim_name=f"{CLAIM_NAME}-2"),
    ]
    return msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, resource_claims=entries)
    )


def pod_with_claim_template(*, in_status: bool, claim_name: str | None = CLAIM_NAME) -> Pod:
    """``podWithClaimTemplate`` / ``podWithClaimTemplateInStatus``."""
    pod = make_pod(POD_NAME, NAMESPACE, uid=POD_UID)
    entry = PodResourceClaim(name=RESOURCE, resource_claim_template_name=CLAIM_NAME)
    statuses = (
        [PodResourceClaimStatus(name=RESOURCE, resource_claim_name=claim_name)] if in_status else []
    )
    return msgspec.structs.replace(
        pod,
        spec=msgspec.structs.replace(pod.spec, resource_claims=[entry]),
        status=msgspec.structs.replace(pod.status, resource_claim_statuses=statuses),
    )


def listers_of(*objects: object) -> Listers:
    listers = Listers()
    for obj in objects:
        listers.put(obj)
    return listers


class Allocators:
    """A ``new_allocator`` that builds the structured allocator and records, per
    allocator, the nodes it was asked about."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self._cel = CELCache()

    def __call__(
        self,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: list[ResourceSlice],
    ) -> Allocator:
        calls: list[str] = []
        self.calls.append(calls)
        real = Allocator(
            features=AllocatorFeatures.from_gates(),
            allocated=allocated,
            classes=classes,
            slices=slices,
            cel=self._cel,
        )
        allocate = real.allocate

        def spied(node: Node, claims: Sequence[ResourceClaim]) -> list[AllocationResult] | None:
            calls.append(node.metadata.name)
            return allocate(node, claims)

        real.allocate = spied  # type: ignore[method-assign]
        return real
