"""Builders for the allocator tests, after upstream's ``allocatortesting`` helpers."""

from __future__ import annotations

from typing import Any

from contracts.k8s import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectMeta
from contracts.k8s.resource import (
    AllocationResult,
    CELDeviceSelector,
    Device,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClass,
    DeviceClassConfiguration,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    DeviceToleration,
    ExactDeviceRequest,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceClaimSpec,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from services.framework.plugins.dynamicresources.allocator import (
    Allocator,
    AllocatorFeatures,
    CELCache,
)

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3 = "pool-1", "pool-2", "pool-3"
REQ0, REQ1 = "req-0", "req-1"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2 = "slice-1", "slice-2"
DEVICE0, DEVICE1, DEVICE2 = "device-0", "device-1", "device-2"
ALL_NODES = "allNodes"

CEL = CELCache()
"""One cache for all tests, as the plugin shares one."""


def node(name: str, region: str) -> Node:
    return Node(metadata=ObjectMeta(name=name, labels={"region": region, "planet": "earth"}))


def selector(expression: str) -> DeviceSelector:
    return DeviceSelector(cel=CELDeviceSelector(expression=expression))


def device_class(name: str, driver: str, config: str | None = None) -> DeviceClass:
    configs = [] if config is None else [DeviceClassConfiguration(opaque=opaque(driver, config))]
    return DeviceClass(
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(selectors=[selector(f'device.driver == "{driver}"')], config=configs),
    )


def opaque(driver: str, attribute: str) -> OpaqueDeviceConfiguration:
    return OpaqueDeviceConfiguration(driver=driver, parameters={attribute: attribute + "Value"})


def request(name: str, class_name: str, count: int = 1, **more: Any) -> DeviceRequest:
    more.setdefault("allocation_mode", "ExactCount")
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(device_class_name=class_name, count=count, **more),
    )


def all_request(name: str, class_name: str, **more: Any) -> DeviceRequest:
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(device_class_name=class_name, allocation_mode="All", **more),
    )


def sub_request(name: str, class_name: str, count: int = 1, **more: Any) -> DeviceSubRequest:
    return DeviceSubRequest(
        name=name,
        device_class_name=class_name,
        allocation_mode="ExactCount",
        count=count,
        **more,
    )


def first_available(name: str, *subs: DeviceSubRequest) -> DeviceRequest:
    return DeviceRequest(name=name, first_available=list(subs))


def claim(
    name: str,
    *requests: DeviceRequest,
    constraints: list[DeviceConstraint] | None = None,
    config: list[Any] | None = None,
) -> ResourceClaim:
    return ResourceClaim(
        metadata=ObjectMeta(name=name),
        spec=ResourceClaimSpec(
            devices=DeviceClaim(
                requests=list(requests), constraints=constraints or [], config=config or []
            )
        ),
    )


def device(
    name: str,
    attributes: dict[str, Any] | None = None,
    capacity: dict[str, str] | None = None,
    **more: Any,
) -> Device:
    """Attribute values: bool, int, ``"v:1.2.3"`` for a version, else a string."""
    caps = {key: DeviceCapacity(value=value) for key, value in (capacity or {}).items()}
    attrs = {}
    for key, value in (attributes or {}).items():
        if isinstance(value, bool):
            attrs[key] = DeviceAttribute(bool_=value)
        elif isinstance(value, int):
            attrs[key] = DeviceAttribute(int_=value)
        elif isinstance(value, str) and value.startswith("v:"):
            attrs[key] = DeviceAttribute(version=value[2:])
        else:
            attrs[key] = DeviceAttribute(string=value)
    return Device(name=name, attributes=attrs, capacity=caps, **more)


def node_selector(region: str) -> NodeSelector:
    return NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_expressions=[
                    NodeSelectorRequirement(key="region", operator="In", values=[region])
                ]
            )
        ]
    )


def local_node_selector(name: str) -> NodeSelector:
    return NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_fields=[
                    NodeSelectorRequirement(key="metadata.name", operator="In", values=[name])
                ]
            )
        ]
    )


def slice_(
    name: str,
    node_selection: str | NodeSelector | None,
    pool: str,
    driver: str,
    *devices: Device,
    generation: int = 1,
    count: int = 1,
    per_device: bool = False,
) -> ResourceSlice:
    spec: dict[str, Any] = {}
    if per_device:
        spec["per_device_node_selection"] = True
    elif isinstance(node_selection, NodeSelector):
        spec["node_selector"] = node_selection
    elif node_selection == ALL_NODES:
        spec["all_nodes"] = True
    elif node_selection is not None:
        spec["node_name"] = node_selection
    return ResourceSlice(
        metadata=ObjectMeta(name=name),
        spec=ResourceSliceSpec(
            driver=driver,
            pool=ResourcePool(name=pool, generation=generation, resource_slice_count=count),
            devices=list(devices),
            **spec,
        ),
    )


def slice_with_one_device(name: str, node_selection: Any, pool: str, driver: str) -> ResourceSlice:
    return slice_(name, node_selection, pool, driver, device(DEVICE1))


def result(
    request_name: str, driver: str, pool: str, device_name: str, admin: bool = False, **more: Any
) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult(
        request=request_name,
        driver=driver,
        pool=pool,
        device=device_name,
        admin_access=True if admin else None,
        **more,
    )


def allocation(
    selector: NodeSelector | None,
    *results: DeviceRequestAllocationResult,
    config: list[DeviceAllocationConfiguration] | None = None,
) -> AllocationResult:
    return AllocationResult(
        devices=DeviceAllocationResult(results=list(results), config=config or []),
        node_selector=selector,
    )


def taint(key: str, effect: str = "NoSchedule", value: str | None = None) -> DeviceTaint:
    return DeviceTaint(key=key, value=value, effect=effect)


def toleration(key: str, operator: str = "Exists", effect: str | None = None) -> DeviceToleration:
    return DeviceToleration(key=key, operator=operator, effect=effect)


def allocate(
    *,
    claims: list[ResourceClaim],
    classes: list[DeviceClass],
    slices: list[ResourceSlice],
    on: Node,
    allocated: frozenset[str] = frozenset(),
    features: AllocatorFeatures | None = None,
) -> list[AllocationResult] | None:
    allocator = Allocator(
        features=features or AllocatorFeatures(),
        allocated=allocated,
        classes={c.metadata.name: c for c in classes},
        slices=slices,
        cel=CEL,
    )
    return allocator.allocate(on, claims)
