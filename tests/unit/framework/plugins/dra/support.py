"""Builders for the allocator tests, after upstream's ``allocatortesting`` helpers
(``sliceWithDevices``, ``device(...).withTaints(...)``, ``deviceAllocationResult``, ...),
and the table runner they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import pytest

from contracts.k8s import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectMeta
from contracts.k8s.resource import (
    AllocationResult,
    CapacityRequirements,
    CELDeviceSelector,
    Counter,
    CounterSet,
    Device,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClaimConfiguration,
    DeviceClass,
    DeviceClassConfiguration,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceCounterConsumption,
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
    AllocationError,
    Allocator,
    AllocatorFeatures,
    CELCache,
)
from services.framework.plugins.dynamicresources.allocator.allocated import (
    EMPTY_CAPACITY,
    AllocatedState,
)
from services.framework.plugins.dynamicresources.allocator.capacity import amount, qualify

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2, REQ3 = "req-0", "req-1", "req-2", "req-3"
SUB0, SUB1 = "subReq-0", "subReq-1"
REQ0_SUB0, REQ0_SUB1 = "req-0/subReq-0", "req-0/subReq-1"
REQ1_SUB0, REQ1_SUB1 = "req-1/subReq-0", "req-1/subReq-1"
REQ2_SUB0 = "req-2/subReq-0"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3, SLICE4 = "slice-1", "slice-2", "slice-3", "slice-4"
DEVICE0, DEVICE1, DEVICE2, DEVICE3, DEVICE4 = (
    "device-0",
    "device-1",
    "device-2",
    "device-3",
    "device-4",
)
COUNTER_SET1, COUNTER_SET2 = "counter-set-1", "counter-set-2"
ALL_NODES: Final = "nodeSelectionAll"
PER_DEVICE: Final = "nodeSelectionPerDevice"
MAX_RESULTS: Final = 32

INT_ATTRIBUTE = "driver-a/numa"
VERSION_ATTRIBUTE = "driver-a/driverVersion"
STRING_ATTRIBUTE = "driver-a/stringAttribute"
BOOL_ATTRIBUTE = "driver-a/boolAttribute"

NO_FEATURES: Final = AllocatorFeatures(
    admin_access=False,
    prioritized_list=False,
    device_taints=False,
    partitionable_devices=False,
    consumable_capacity=False,
    device_binding=False,
    device_status=False,
)
"""Upstream's ``Features{}``: a case turns on what it needs."""

CEL = CELCache()
"""One cache for all tests, as the plugin shares one."""


def features(**on: bool) -> AllocatorFeatures:
    values = {name: getattr(NO_FEATURES, name) for name in NO_FEATURES.__dataclass_fields__}
    values.update(on)
    return AllocatorFeatures(**values)


def node(name: str, region: str) -> Node:
    return Node(metadata=ObjectMeta(name=name, labels={"region": region, "planet": "earth"}))


def selector(expression: str) -> DeviceSelector:
    return DeviceSelector(cel=CELDeviceSelector(expression=expression))


def memory_at_least(amount: str, driver: str = DRIVER_A) -> DeviceSelector:
    return selector(f'device.capacity["{driver}"].memory.compareTo(quantity("{amount}")) >= 0')


def device_class(
    name: str, driver: str, config: str | None = None, expression: str | None = None
) -> DeviceClass:
    configs = [] if config is None else [DeviceClassConfiguration(opaque=opaque(driver, config))]
    return DeviceClass(
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(
            selectors=[selector(expression or f'device.driver == "{driver}"')], config=configs
        ),
    )


def opaque(driver: str, attribute: str) -> OpaqueDeviceConfiguration:
    return OpaqueDeviceConfiguration(driver=driver, parameters={attribute: attribute + "Value"})


def request(name: str, class_name: str, count: int = 1, **more: Any) -> DeviceRequest:
    more.setdefault("allocation_mode", "ExactCount")
    if "capacity" in more:
        more["capacity"] = CapacityRequirements(requests={"capacity-0": more["capacity"]})
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(device_class_name=class_name, count=count, **more),
    )


def all_request(name: str, class_name: str, **more: Any) -> DeviceRequest:
    return request(name, class_name, 0, allocation_mode="All", **more)


def sub_request(name: str, class_name: str, count: int = 1, **more: Any) -> DeviceSubRequest:
    more.setdefault("allocation_mode", "ExactCount")
    if "capacity" in more:
        more["capacity"] = CapacityRequirements(requests={"capacity-0": more["capacity"]})
    return DeviceSubRequest(name=name, device_class_name=class_name, count=count, **more)


def first_available(name: str, *subs: DeviceSubRequest) -> DeviceRequest:
    return DeviceRequest(name=name, first_available=list(subs))


def claim(
    name: str,
    *requests: DeviceRequest,
    constraints: list[DeviceConstraint] | None = None,
    config: list[DeviceClaimConfiguration] | None = None,
) -> ResourceClaim:
    return ResourceClaim(
        metadata=ObjectMeta(name=name),
        spec=ResourceClaimSpec(
            devices=DeviceClaim(
                requests=list(requests), constraints=constraints or [], config=config or []
            )
        ),
    )


def with_tolerations(c: ResourceClaim, *tolerations: DeviceToleration) -> ResourceClaim:
    """``withTolerations``: added to every request."""
    requests = [
        DeviceRequest(
            name=r.name,
            exactly=ExactDeviceRequest(
                **{
                    **{f: getattr(r.exactly, f) for f in r.exactly.__struct_fields__},
                    "tolerations": [*r.exactly.tolerations, *tolerations],
                }
            ),
        )
        if r.exactly is not None
        else r
        for r in c.spec.devices.requests
    ]
    devices = c.spec.devices
    return claim(c.metadata.name, *requests, constraints=devices.constraints, config=devices.config)


def claim_config(requests: list[str], driver: str, attribute: str) -> DeviceClaimConfiguration:
    return DeviceClaimConfiguration(requests=requests, opaque=opaque(driver, attribute))


def attrs(**values: Any) -> dict[str, DeviceAttribute]:
    """Attribute values: bool, int, ``"v:1.2.3"`` for a version, else a string."""
    out = {}
    for key, value in values.items():
        if isinstance(value, bool):
            out[key] = DeviceAttribute(bool_=value)
        elif isinstance(value, int):
            out[key] = DeviceAttribute(int_=value)
        elif isinstance(value, str) and value.startswith("v:"):
            out[key] = DeviceAttribute(version=value[2:])
        else:
            out[key] = DeviceAttribute(string=value)
    return out


def device(
    name: str,
    capacity: dict[str, str] | None = None,
    attributes: dict[str, DeviceAttribute] | None = None,
    *,
    consumes: list[DeviceCounterConsumption] | None = None,
    from_counters: bool = False,
    node_selection: str | NodeSelector | None = None,
    **more: Any,
) -> Device:
    """``device(name, capacity, attributes)``; ``from_counters`` gives it the capacity of
    what it consumes (upstream's ``fromCounters``)."""
    caps = {key: DeviceCapacity(value=value) for key, value in (capacity or {}).items()}
    if from_counters:
        for use in consumes or []:
            for key, counter in use.counters.items():
                caps[key] = DeviceCapacity(value=counter.value)
    if isinstance(node_selection, NodeSelector):
        more["node_selector"] = node_selection
    elif node_selection == ALL_NODES:
        more["all_nodes"] = True
    elif node_selection is not None:
        more["node_name"] = node_selection
    return Device(
        name=name,
        attributes=attributes or {},
        capacity=caps,
        consumes_counters=consumes or [],
        **more,
    )


def consumption(counter_set: str, **counters: str) -> DeviceCounterConsumption:
    return DeviceCounterConsumption(
        counter_set=counter_set, counters={k: Counter(value=v) for k, v in counters.items()}
    )


def counter_set(name: str, **counters: str) -> CounterSet:
    return CounterSet(name=name, counters={k: Counter(value=v) for k, v in counters.items()})


def label_selector(key: str, *values: str) -> NodeSelector:
    return NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_expressions=[
                    NodeSelectorRequirement(key=key, operator="In", values=list(values))
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


def pool(name: str, count: int = 1, generation: int = 1) -> ResourcePool:
    """``resourcePool``; a plain pool name means one slice, generation 1."""
    return ResourcePool(name=name, generation=generation, resource_slice_count=count)


def slice_with_devices(
    name: str,
    node_selection: str | NodeSelector,
    slice_pool: str | ResourcePool,
    driver: str,
    *devices: Device,
    shared_counters: list[CounterSet] | None = None,
) -> ResourceSlice:
    spec: dict[str, Any] = {}
    if isinstance(node_selection, NodeSelector):
        spec["node_selector"] = node_selection
    elif node_selection == ALL_NODES:
        spec["all_nodes"] = True
    elif node_selection == PER_DEVICE:
        spec["per_device_node_selection"] = True
    else:
        spec["node_name"] = node_selection
    return ResourceSlice(
        metadata=ObjectMeta(name=name),
        spec=ResourceSliceSpec(
            driver=driver,
            pool=pool(slice_pool) if isinstance(slice_pool, str) else slice_pool,
            devices=list(devices),
            shared_counters=shared_counters or [],
            **spec,
        ),
    )


def slice_with_counter_sets(
    name: str,
    node_selection: str | NodeSelector,
    slice_pool: str | ResourcePool,
    driver: str,
    *sets: CounterSet,
) -> ResourceSlice:
    return slice_with_devices(name, node_selection, slice_pool, driver, shared_counters=list(sets))


def slice_with_one_device(
    name: str, node_selection: str | NodeSelector, slice_pool: str | ResourcePool, driver: str
) -> ResourceSlice:
    return slice_with_devices(name, node_selection, slice_pool, driver, device(DEVICE1))


def slice_with_multiple_devices(
    name: str, node_selection: str, slice_pool: str, driver: str, count: int
) -> ResourceSlice:
    devices = [device(f"device-{i}") for i in range(count)]
    return slice_with_devices(name, node_selection, slice_pool, driver, *devices)


def result(
    request_name: str,
    driver: str,
    pool_name: str,
    device_name: str,
    admin: bool = False,
    *tolerations: DeviceToleration,
    **more: Any,
) -> DeviceRequestAllocationResult:
    """``deviceAllocationResult``."""
    return DeviceRequestAllocationResult(
        request=request_name,
        driver=driver,
        pool=pool_name,
        device=device_name,
        admin_access=True if admin else None,
        tolerations=list(tolerations),
        **more,
    )


def many_results(
    request_name: str, driver: str, pool_name: str, count: int, start: int
) -> list[DeviceRequestAllocationResult]:
    """``multipleDeviceAllocationResults``."""
    return [
        result(request_name, driver, pool_name, f"device-{i}") for i in range(start, start + count)
    ]


def allocation(
    node_selector: NodeSelector | None,
    *results: DeviceRequestAllocationResult,
    config: list[DeviceAllocationConfiguration] | None = None,
) -> AllocationResult:
    return AllocationResult(
        devices=DeviceAllocationResult(results=list(results), config=config or []),
        node_selector=node_selector,
    )


def taint(key: str, value: str, effect: str) -> DeviceTaint:
    return DeviceTaint(key=key, value=value, effect=effect)


def toleration(key: str, operator: str, effect: str, value: str | None = None) -> DeviceToleration:
    return DeviceToleration(key=key, operator=operator, effect=effect, value=value)


N1 = node(NODE1, REGION1)


@dataclass
class Case:
    """One row of upstream's table."""

    claims: list[ResourceClaim]
    classes: list[DeviceClass] = field(default_factory=list)
    slices: list[ResourceSlice] = field(default_factory=list)
    node: Node = N1
    expect: list[AllocationResult] | None = None
    error: str | None = None
    allocated: tuple[str, ...] = ()
    features: AllocatorFeatures = NO_FEATURES
    allocated_capacity: dict[str, dict[str, str]] = field(default_factory=dict)
    """Upstream's ``allocatedCapacityDevices``: per device id, capacity -> consumed."""


FIXED_SHARE_ID: Final = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
"""Upstream's ``fixedShareID``: every generated share id is replaced by it to compare."""


def allocated_state(case: Case) -> AllocatedState:
    capacity = {
        device_id: {
            qualify(name, device_id.partition("/")[0]): amount(value)
            for name, value in values.items()
        }
        for device_id, values in case.allocated_capacity.items()
    }
    return AllocatedState(
        devices=frozenset(case.allocated),
        shared_devices=frozenset(capacity),
        capacity=capacity or EMPTY_CAPACITY,
    )


def fixed_share_ids(found: list[AllocationResult] | None) -> list[AllocationResult] | None:
    """The results with each ``shareID`` replaced by :data:`FIXED_SHARE_ID`, as upstream's
    runner does; a share id must look like a UUID."""
    if found is None:
        return None
    out = []
    for allocation_result in found:
        results = []
        for r in allocation_result.devices.results:
            if r.share_id is not None:
                assert len(r.share_id) == 36 and r.share_id.count("-") == 4, r.share_id
                r = msgspec.structs.replace(r, share_id=FIXED_SHARE_ID)
            results.append(r)
        devices = msgspec.structs.replace(allocation_result.devices, results=results)
        out.append(msgspec.structs.replace(allocation_result, devices=devices))
    return out


def run_case(case: Case) -> None:
    """Allocate and compare: the error's text (a substring, as upstream's
    ``ContainSubstring``), else the results exactly (devices in pick order, share ids
    fixed)."""
    allocator = Allocator(
        features=case.features,
        allocated=allocated_state(case),
        classes={c.metadata.name: c for c in case.classes},
        slices=case.slices,
        cel=CEL,
    )
    if case.error is not None:
        with pytest.raises(AllocationError) as caught:
            allocator.allocate(case.node, case.claims)
        assert case.error in str(caught.value)
        return
    assert fixed_share_ids(allocator.allocate(case.node, case.claims)) == case.expect
