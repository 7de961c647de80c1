"""Builders for DynamicResources' extended-resource tests, named after upstream's
fixtures in dynamicresources_test.go (``podWithExtendedResourceName``,
``deviceClassWithExtendResourceName``, ``workerNodeWithExtendedResource``,
``extendedResourceClaim``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from contracts.k8s import (
    ContainerExtendedResourceRequest,
    DeviceClass,
    Node,
    ObjectMeta,
    Pod,
    PodExtendedResourceClaimStatus,
    ResourceClaim,
)
from contracts.k8s.resource import (
    DEVICE_CLASS_PREFIX,
    FINALIZER,
    AllocationResult,
    DeviceClaim,
    DeviceClassSpec,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
)
from contracts.podstatus import PodStatusPatch
from services.framework.plugins.dynamicresources.extended import new_claim
from tests.builders import container, make_node, make_pod
from tests.unit.framework.plugins.dra.plugin_support import (
    CLASS,
    HOSTNAME,
    NAMESPACE,
    NODE,
    POD_NAME,
    POD_UID,
    allocation,
)

EXTENDED = "my-example.com/my-extended-resource"
"""``extendedResourceName``."""
EXTENDED2 = "my-example.com/my-extended-resource2"
IMPLICIT = DEVICE_CLASS_PREFIX + CLASS
"""``implicitExtendedResourceName``."""
STAMP = "2027-01-15T08:00:00Z"


def extended_class(name: str = CLASS, resource: str | None = EXTENDED) -> DeviceClass:
    """``deviceClassWithExtendResourceName``: ``name`` serving ``resource``."""
    return DeviceClass(
        metadata=ObjectMeta(name=name, uid=f"{name}-uid"),
        spec=DeviceClassSpec(extended_resource_name=resource),
    )


def extended_pod(*containers: Mapping[str, str]) -> Pod:
    """``podWithExtendedResourceName`` and kin: one container ``con<i>`` per mapping."""
    specs = [container(requests, name=f"con{i}") for i, requests in enumerate(containers)]
    return make_pod(POD_NAME, NAMESPACE, uid=POD_UID, requests=specs)


def worker_with(allocatable: Mapping[str, str], name: str = NODE) -> Node:
    """``workerNodeWithExtendedResource``: the worker offering ``allocatable`` too."""
    return make_node(
        name,
        labels={HOSTNAME: name},
        allocatable={"cpu": "4", "memory": "32Gi", "pods": 110, **allocatable},
    )


def request(name: str, class_name: str = CLASS, count: int = 1) -> DeviceRequest:
    """``RequestWithName`` / ``RequestWithNameCount``."""
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(
            device_class_name=class_name, allocation_mode="ExactCount", count=count
        ),
    )


def in_memory(pod: Pod, *requests: DeviceRequest) -> ResourceClaim:
    """The extended-resource claim as Filter makes it for a node (no allocation)."""
    claim = new_claim(pod)
    spec = ResourceClaimSpec(devices=DeviceClaim(requests=list(requests)))
    return msgspec.structs.replace(claim, spec=spec)


def created(claim: ResourceClaim, result: AllocationResult) -> ResourceClaim:
    """What PreBind publishes: the claim with the finalizer, its allocation (stamped)
    and the pod in reservedFor (upstream's ``reserve(extendedResourceClaim, pod)``)."""
    meta = msgspec.structs.replace(claim.metadata, finalizers=[FINALIZER])
    consumer = ResourceClaimConsumerReference(resource="pods", name=POD_NAME, uid=POD_UID)
    status = ResourceClaimStatus(
        allocation=msgspec.structs.replace(result, allocation_timestamp=STAMP),
        reserved_for=[consumer],
    )
    return msgspec.structs.replace(claim, metadata=meta, status=status)


def found(pod: Pod, *requests: DeviceRequest, node: str = NODE) -> ResourceClaim:
    """``extendedResourceClaim`` (``…Node2``): made for the pod in an earlier cycle,
    allocated on ``node``."""
    claim = in_memory(pod, *requests)
    meta = msgspec.structs.replace(claim.metadata, name=f"{POD_NAME}-extended-resources-0")
    results = tuple((r.name, "instance-1") for r in requests)
    status = ResourceClaimStatus(allocation=allocation(*results, node=node))
    return msgspec.structs.replace(claim, metadata=meta, status=status)


def patch(claim: ResourceClaim, *mappings: tuple[str, str, str]) -> PodStatusPatch:
    """The pod's ``status.extendedResourceClaimStatus`` PreBind publishes."""
    return PodStatusPatch(
        namespace=NAMESPACE,
        name=POD_NAME,
        uid=POD_UID,
        plugin="DynamicResources",
        scheduler_name="default-scheduler",
        extended_resource_claim_status=PodExtendedResourceClaimStatus(
            request_mappings=[
                ContainerExtendedResourceRequest(container_name=c, resource_name=r, request_name=q)
                for c, r, q in mappings
            ],
            resource_claim_name=claim.metadata.name,
        ),
    )


def results(*pairs: tuple[str, str], node: str = NODE) -> AllocationResult:
    """``(request, device)`` pairs on ``node``'s pool."""
    return allocation(*pairs, node=node)


__all__: Sequence[str] = (
    "EXTENDED",
    "EXTENDED2",
    "IMPLICIT",
    "created",
    "extended_class",
    "extended_pod",
    "found",
    "in_memory",
    "patch",
    "request",
    "results",
    "worker_with",
)
