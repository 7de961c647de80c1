"""The builders of test_allocator_pools and the second half of its table (``MORE``, which
the test file's ``CASES`` ends with): one table, two files."""

from __future__ import annotations

from typing import Any

from contracts.k8s.resource import (
    Device,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceToleration,
    ResourceSlice,
)
from tests.unit.framework.plugins.dra.support import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    REQ0,
    REQ0_SUB1,
    REQ1,
    SLICE1,
    SLICE2,
    SLICE3,
    SLICE4,
    SUB0,
    SUB1,
    Case,
    allocation,
    claim,
    consumption,
    counter_set,
    device,
    device_class,
    features,
    first_available,
    local_node_selector,
    memory_at_least,
    pool,
    request,
    result,
    slice_with_counter_sets,
    slice_with_devices,
    slice_with_one_device,
    sub_request,
    taint,
    toleration,
    with_tolerations,
)

A = device_class(CLASS_A, DRIVER_A)
B = device_class(CLASS_B, DRIVER_B)
LOCAL1 = local_node_selector(NODE1)
PART = features(partitionable_devices=True)
PART_PRIO = features(partitionable_devices=True, prioritized_list=True)
PART_BIND = features(partitionable_devices=True, device_binding=True)


def counted(name: str, set_name: str = COUNTER_SET1, **counters: str) -> Device:
    """``device(name, fromCounters, nil).withDeviceCounterConsumption(...)``."""
    return device(name, consumes=[consumption(set_name, **counters)], from_counters=True)


def three_by_memory(*memory: str) -> list[ResourceSlice]:
    return [
        slice_with_devices(
            SLICE1,
            NODE1,
            pool(POOL1, 2),
            DRIVER_A,
            *(
                counted(n, memory=m)
                for n, m in zip((DEVICE1, DEVICE2, DEVICE3), memory, strict=True)
            ),
        ),
        slice_with_counter_sets(
            SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
        ),
    ]


def one_or_other() -> list[DeviceRequest]:
    return [
        request(REQ0, CLASS_A),
        first_available(
            REQ1,
            sub_request(SUB0, CLASS_A, selectors=[memory_at_least("6Gi")]),
            sub_request(SUB1, CLASS_A, selectors=[memory_at_least("4Gi")]),
        ),
    ]


def two_sets(name: str, mem1: str, cpus1: str, cpus2: str, mem2: str) -> Device:
    return device(
        name,
        consumes=[
            consumption(COUNTER_SET1, memory=mem1, cpus=cpus1),
            consumption(COUNTER_SET2, cpus=cpus2, memory=mem2),
        ],
        from_counters=True,
    )


def cpu_mem(name: str, cpus: str, memory: str) -> Device:
    return counted(name, cpus=cpus, memory=memory)


def bind(
    name: str, memory: str, ready: list[str] | None, failed: list[str] | None, **more: Any
) -> Device:
    return device(
        name,
        consumes=[consumption(COUNTER_SET1, memory=memory)],
        from_counters=True,
        binding_conditions=ready or [],
        binding_failure_conditions=failed or [],
        **more,
    )


def bound(
    request_name: str,
    name: str,
    ready: list[str] | None,
    failed: list[str] | None,
    *tolerations: DeviceToleration,
) -> DeviceRequestAllocationResult:
    return result(
        request_name,
        DRIVER_A,
        POOL1,
        name,
        False,
        *tolerations,
        binding_conditions=ready or [],
        binding_failure_conditions=failed or [],
    )


KEY1 = toleration("key1", "Exists", "NoSchedule")

MORE: dict[str, Case] = {
    "partitionable-devices-with-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART_BIND,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                bind(DEVICE1, "4Gi", ["IsPrepare"], ["BindingFailed"]),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
        ],
        expect=[allocation(LOCAL1, bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"]))],
    ),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        features=PART_BIND,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                bind(DEVICE1, "4Gi", ["IsPrepare"], ["BindingFailed"]),
                bind(DEVICE2, "4Gi", ["IsPrepare2"], ["BindingFailed2"]),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                bound(REQ0, DEVICE2, ["IsPrepare2"], ["BindingFailed2"]),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3))],
        classes=[A],
        features=PART_BIND,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                bind(DEVICE1, "2Gi", ["IsPrepare"], ["BindingFailed"]),
                bind(DEVICE2, "2Gi", None, None),
                bind(DEVICE3, "4Gi", ["IsReady"], ["BindingTimeout"]),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                bound(REQ0, DEVICE2, None, None),
                bound(REQ0, DEVICE3, ["IsReady"], ["BindingTimeout"]),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        features=PART_BIND,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 4),
                DRIVER_A,
                bind(DEVICE1, "4Gi", ["IsPrepare"], ["BindingFailed"]),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
            slice_with_devices(
                SLICE3,
                NODE1,
                pool(POOL1, 4),
                DRIVER_A,
                counted(DEVICE2, COUNTER_SET2, memory="4Gi"),
            ),
            slice_with_counter_sets(
                SLICE4, NODE1, pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET2, memory="8Gi")
            ),
        ],
        # Upstream compares results as a set; ksched's pick order is the slices' order.
        expect=[
            allocation(
                LOCAL1,
                bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                bound(REQ0, DEVICE2, None, None),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-and-taints": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        features=features(partitionable_devices=True, device_binding=True, device_taints=True),
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                bind(
                    DEVICE1,
                    "4Gi",
                    ["IsPrepare"],
                    ["BindingFailed"],
                    taints=[taint("key1", "value1", "NoSchedule")],
                ),
                bind(DEVICE2, "4Gi", None, None),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
        ],
    ),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": Case(
        claims=[with_tolerations(claim(CLAIM0, request(REQ0, CLASS_A, 2)), KEY1)],
        classes=[A],
        features=features(partitionable_devices=True, device_binding=True, device_taints=True),
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                bind(
                    DEVICE1,
                    "4Gi",
                    ["IsPrepare"],
                    ["BindingFailed"],
                    taints=[taint("key1", "value1", "NoSchedule")],
                ),
                bind(DEVICE2, "4Gi", None, None),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"], KEY1),
                bound(REQ0, DEVICE2, None, None, KEY1),
            )
        ],
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 4), DRIVER_A, device(DEVICE1)),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1)
            ),
            slice_with_devices(SLICE3, NODE1, pool(POOL1, 4), DRIVER_A, device(DEVICE2)),
            slice_with_counter_sets(
                SLICE4, NODE1, pool(POOL1, 4), DRIVER_A, counter_set(COUNTER_SET1)
            ),
        ],
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE1, consumes=[consumption(COUNTER_SET2)]),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1)
            ),
        ],
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(  # noqa: E501
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE1, consumes=[consumption(COUNTER_SET1, memory="8Gi")]),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, **{"other-memory": "8Gi"}),
            ),
        ],
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, consumes=[consumption(COUNTER_SET1, memory="8Gi")]),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, POOL2, DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
        ],
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, selectors=[memory_at_least("6Gi")]),
                    sub_request(SUB1, CLASS_A, selectors=[memory_at_least("2Gi")]),
                ),
            )
        ],
        classes=[A],
        features=PART_PRIO,
        slices=[
            slice_with_counter_sets(
                SLICE1, NODE1, pool(POOL1, 3), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                pool(POOL1, 3),
                DRIVER_A,
                counted(DEVICE1, memory="6Gi"),
                counted(DEVICE2, memory="2Gi"),
            ),
            slice_with_devices(
                SLICE3,
                NODE2,
                pool(POOL1, 3),
                DRIVER_A,
                device(DEVICE3, consumes=[consumption(COUNTER_SET1, memory="6Gi")]),
            ),
        ],
        allocated=("driver-a/pool-1/device-3",),
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE2))],
    ),
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_counter_sets(
                SLICE1, NODE1, pool(POOL1, 3), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
            slice_with_devices(
                SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, counted(DEVICE1, memory="6Gi")
            ),
            slice_with_devices(
                SLICE3,
                NODE2,
                pool(POOL1, 3),
                DRIVER_A,
                device(DEVICE3, consumes=[consumption(COUNTER_SET2, memory="6Gi")]),
            ),
        ],
        error="invalid resource pools were encountered",
    ),
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 0, allocation_mode="All"))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE2, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2)),
        ],
    ),
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
            slice_with_devices(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE2, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE1, NODE2, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
            slice_with_devices(SLICE2, NODE1, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE2, NODE1, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
            slice_with_devices(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE2, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE1, NODE2, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
            slice_with_devices(SLICE2, NODE1, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
        ],
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE3, NODE1, pool(POOL2, 1), DRIVER_A, device(DEVICE2)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL2, DEVICE2))],
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_with_devices(SLICE3, NODE1, pool(POOL2, 1), DRIVER_A, device(DEVICE2)),
        ],
        allocated=("driver-a/pool-2/device-2",),
        error="invalid resource pools were encountered",
    ),
    "no-allocation-from-incomplete-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1))],
    ),
    "consumable-capacity-disabled-feature": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        features=features(device_binding=True),
        error="claim claim-0, request req-0: has capacity requests, but the "
        "DRAConsumableCapacity feature is disabled",
    ),
    "consumable-capacity-disabled-feature-with-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, capacity="1"),
                    sub_request(SUB1, CLASS_A, capacity="1"),
                ),
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        features=features(device_binding=True, prioritized_list=True),
        error="claim claim-0, subrequest subReq-0: has capacity requests, but the "
        "DRAConsumableCapacity feature is disabled",
    ),
}
