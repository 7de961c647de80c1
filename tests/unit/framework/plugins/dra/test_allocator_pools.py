"""Upstream's allocator table, third part: partitionable devices (shared counters),
per-device node selection, multi-host pools, invalid and incomplete pools, and capacity
requests with DRAConsumableCapacity off. Case names are upstream's."""

from __future__ import annotations

import pytest

from services.framework.plugins.dynamicresources.allocator import (
    AllocationFailedOnNode,
    Allocator,
    CELCache,
)
from tests.unit.framework.plugins.dra.allocator_pools_cases import (
    LOCAL1,
    MORE,
    PART,
    PART_PRIO,
    A,
    B,
    counted,
    cpu_mem,
    one_or_other,
    three_by_memory,
    two_sets,
)
from tests.unit.framework.plugins.dra.support import (
    ALL_NODES,
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
    PER_DEVICE,
    POOL1,
    POOL2,
    REGION1,
    REQ0,
    REQ0_SUB1,
    REQ1,
    REQ1_SUB1,
    SLICE1,
    SLICE2,
    SLICE3,
    SLICE4,
    SUB0,
    SUB1,
    Case,
    allocated_state,
    allocation,
    attrs,
    claim,
    consumption,
    counter_set,
    device,
    first_available,
    label_selector,
    memory_at_least,
    pool,
    request,
    result,
    run_case,
    selector,
    slice_with_counter_sets,
    slice_with_devices,
    sub_request,
)

CASES: dict[str, Case] = {
    "partitionable-devices-single-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE1, consumes=[consumption(COUNTER_SET1, memory="4Gi")]),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, memory="8Gi")
            ),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-prioritized-list": Case(
        claims=[claim(CLAIM0, *one_or_other())],
        classes=[A],
        features=PART_PRIO,
        slices=three_by_memory("4Gi", "6Gi", "4Gi"),
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE3),
            )
        ],
    ),
    "partitionable-devices-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A))],
        classes=[A],
        features=PART,
        slices=three_by_memory("4Gi", "6Gi", "4Gi"),
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
            )
        ],
    ),
    "partitionable-devices-multiple-capacity-pools": Case(
        claims=[claim(CLAIM0, *one_or_other())],
        classes=[A],
        features=PART_PRIO,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                *(
                    device(
                        n,
                        consumes=[
                            consumption(COUNTER_SET1, memory=m),
                            consumption(COUNTER_SET2, cpus=c),
                        ],
                        from_counters=True,
                    )
                    for n, m, c in (
                        (DEVICE1, "4Gi", "4"),
                        (DEVICE2, "6Gi", "6"),
                        (DEVICE3, "4Gi", "4"),
                    )
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, memory="18Gi"),
                counter_set(COUNTER_SET2, cpus="8"),
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE3),
            )
        ],
    ),
    "partitionable-devices-multiple-counters": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                two_sets(DEVICE1, "4Gi", "6", "4", "2Gi"),
                two_sets(DEVICE2, "6Gi", "4", "6", "6Gi"),
                two_sets(DEVICE3, "4Gi", "4", "4", "4Gi"),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, cpus="8", memory="18Gi"),
                counter_set(COUNTER_SET2, cpus="12", memory="18Gi"),
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
            )
        ],
    ),
    "partitionable-devices-multiple-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                cpu_mem(DEVICE1, "6", "4Gi"),
                cpu_mem(DEVICE2, "4", "6Gi"),
                cpu_mem(DEVICE3, "4", "4Gi"),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, cpus="8", memory="18Gi"),
            ),
            slice_with_devices(
                SLICE3,
                NODE1,
                pool(POOL2, 2),
                DRIVER_A,
                cpu_mem(DEVICE1, "6", "4Gi"),
                cpu_mem(DEVICE2, "1", "7Gi"),
                cpu_mem(DEVICE3, "1", "7Gi"),
            ),
            slice_with_counter_sets(
                SLICE4,
                NODE1,
                pool(POOL2, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, cpus="8", memory="18Gi"),
            ),
        ],
        allocated=(
            "driver-a/pool-1/device-2",
            "driver-a/pool-1/device-3",
            "driver-a/pool-2/device-1",
        ),
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL2, DEVICE2),
                result(REQ1, DRIVER_A, POOL2, DEVICE3),
            )
        ],
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                *(
                    device(n, consumes=[consumption(COUNTER_SET1, memory=m)])
                    for n, m in ((DEVICE1, "5Gi"), (DEVICE2, "4Gi"), (DEVICE3, "4Gi"))
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, memory="8Gi", unused="1Gi"),
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
            )
        ],
    ),
    "partitionable-devices-no-capacity-available": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                counted(DEVICE1, memory="4Gi"),
                counted(DEVICE2, memory="16Gi"),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")
            ),
        ],
        allocated=("driver-a/pool-1/device-2",),
    ),
    "partitionable-devices-overallocated-capacity-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                counted(DEVICE1, memory="4Gi"),
                counted(DEVICE2, memory="20Gi"),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")
            ),
        ],
        allocated=("driver-a/pool-1/device-2",),
    ),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, consumes=[consumption(COUNTER_SET1, memory="4Gi")]),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, POOL1, DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")
            ),
        ],
    ),
    "partitionable-devices-disabled-other-device-do-not-consume-counters": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE1, consumes=[consumption(COUNTER_SET1, memory="4Gi")]),
                device(DEVICE2),
            ),
            slice_with_counter_sets(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_set(COUNTER_SET1, memory="18Gi")
            ),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
    "partitionable-devices-disabled-per-device-node-selection": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(
                SLICE1, PER_DEVICE, POOL1, DRIVER_A, device(DEVICE2, node_selection=NODE1)
            )
        ],
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, selectors=[memory_at_least("6Gi")]),
                    sub_request(SUB1, CLASS_A, selectors=[memory_at_least("4Gi")]),
                ),
            )
        ],
        classes=[A],
        features=PART_PRIO,
        slices=[
            slice_with_devices(
                SLICE1,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                device(
                    DEVICE1,
                    consumes=[consumption(COUNTER_SET1, memory="4Gi")],
                    from_counters=True,
                    node_selection=NODE1,
                ),
                device(
                    DEVICE2,
                    consumes=[consumption(COUNTER_SET1, memory="6Gi")],
                    from_counters=True,
                    node_selection=NODE2,
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, memory="18Gi"),
            ),
        ],
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=PART_PRIO,
        slices=[
            slice_with_devices(
                SLICE1,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                device(
                    DEVICE1,
                    consumes=[consumption(COUNTER_SET1, memory="4Gi")],
                    from_counters=True,
                    node_selection=label_selector("region", REGION1),
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, memory="18Gi"),
            ),
        ],
        expect=[
            allocation(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))
        ],
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3), request(REQ1, CLASS_B, 3))],
        classes=[A, B],
        features=PART_PRIO,
        slices=[
            slice_with_devices(
                SLICE1,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                *(
                    device(
                        n,
                        consumes=[consumption(COUNTER_SET1, memory="4Gi")],
                        from_counters=True,
                        node_selection=where,
                    )
                    for n, where in (
                        (DEVICE1, label_selector("region", REGION1)),
                        (DEVICE2, NODE1),
                        (DEVICE3, ALL_NODES),
                    )
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, memory="18Gi"),
            ),
            slice_with_devices(
                SLICE3,
                NODE1,
                pool(POOL2, 2),
                DRIVER_B,
                *(counted(n, COUNTER_SET2, memory="4Gi") for n in (DEVICE1, DEVICE2, DEVICE3)),
            ),
            slice_with_counter_sets(
                SLICE4, NODE1, pool(POOL2, 2), DRIVER_B, counter_set(COUNTER_SET2, memory="12Gi")
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                *(result(REQ0, DRIVER_A, POOL1, n) for n in (DEVICE1, DEVICE2, DEVICE3)),
                *(result(REQ1, DRIVER_B, POOL2, n) for n in (DEVICE1, DEVICE2, DEVICE3)),
            )
        ],
    ),
    "partitionable-devices-with-attribute-selector": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                request(
                    REQ1, CLASS_A, selectors=[selector('device.attributes["driver-a"].special')]
                ),
            )
        ],
        classes=[A],
        features=PART,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                *(
                    device(
                        n,
                        None,
                        attrs(special=special),
                        consumes=[
                            consumption(COUNTER_SET1, **{cpu: "1"}),
                            consumption(COUNTER_SET2, mem="10Gi"),
                        ],
                    )
                    for n, special, cpu in (
                        (DEVICE1, True, "cpu1"),
                        (DEVICE2, False, "cpu2"),
                        (DEVICE3, False, "cpu3"),
                    )
                ),
            ),
            slice_with_counter_sets(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_set(COUNTER_SET1, cpu1="1", cpu2="1", cpu3="1"),
                counter_set(COUNTER_SET2, mem="30Gi"),
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
            )
        ],
    ),
    **MORE,
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    run_case(case)


def test_multiple_allocations_flag_is_ignored_with_the_gate_off() -> None:
    run_case(
        Case(
            claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
            classes=[A],
            slices=[
                slice_with_devices(
                    SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, allow_multiple_allocations=True)
                )
            ],
            expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        )
    )


def test_invalid_pools_fail_the_node_not_the_pod() -> None:
    """Upstream wraps this one in ErrFailedAllocationOnNode: Unschedulable, not Error."""
    case = CASES["invalid-pool-is-error-if-no-other-device-can-be-allocated"]
    allocator = Allocator(
        features=case.features,
        allocated=allocated_state(case),
        classes={c.metadata.name: c for c in case.classes},
        slices=case.slices,
        cel=CELCache(),
    )
    with pytest.raises(AllocationFailedOnNode):
        allocator.allocate(case.node, case.claims)
