"""Upstream's allocator table, second part: firstAvailable (prioritized list), device
taints and binding conditions. Case names are upstream's."""

from __future__ import annotations

import pytest

from contracts.k8s.resource import (
    DeviceAllocationConfiguration,
    DeviceConstraint,
)
from tests.unit.framework.plugins.dra.allocator_prioritized_cases import (
    LOCAL1,
    MORE,
    PRIO,
    A,
    B,
    one_device,
)
from tests.unit.framework.plugins.dra.support import (
    BOOL_ATTRIBUTE,
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    POOL2,
    REQ0,
    REQ0_SUB0,
    REQ0_SUB1,
    REQ1,
    REQ1_SUB1,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    VERSION_ATTRIBUTE,
    Case,
    allocation,
    attrs,
    claim,
    claim_config,
    device,
    device_class,
    features,
    first_available,
    memory_at_least,
    opaque,
    request,
    result,
    run_case,
    selector,
    slice_with_devices,
    slice_with_one_device,
    sub_request,
)

CASES: dict[str, Case] = {
    "all-devices-slice-without-devices-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 0, allocation_mode="All"),
                    sub_request(SUB1, CLASS_B),
                ),
            )
        ],
        classes=[A, B],
        features=PRIO,
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_B, POOL2, DEVICE1))],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 0, allocation_mode="All"),
                    sub_request(SUB1, CLASS_B),
                ),
            )
        ],
        classes=[A, B],
        features=PRIO,
        slices=[slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_B, POOL2, DEVICE1))],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 0, allocation_mode="All"),
                    sub_request(SUB1, CLASS_B),
                ),
            )
        ],
        classes=[A, B],
        features=PRIO,
        allocated=("driver-a/pool-1/device-1",),
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_B, POOL2, DEVICE1))],
    ),
    "prioritized-list-first-unavailable": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)),
            )
        ],
        classes=[A, B],
        slices=one_device(),
        features=PRIO,
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))],
    ),
    "prioritized-list-non-available": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B, 2), sub_request(SUB1, CLASS_A, 2)),
            )
        ],
        classes=[A, B],
        features=PRIO,
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
    ),
    "prioritized-list-device-config": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_A), sub_request(SUB1, CLASS_B, 2)),
                config=[
                    claim_config([REQ0_SUB0], DRIVER_A, "foo"),
                    claim_config([REQ0_SUB1], DRIVER_B, "bar"),
                ],
            )
        ],
        classes=[A, B],
        features=PRIO,
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2))
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0_SUB1, DRIVER_B, POOL1, DEVICE1),
                result(REQ0_SUB1, DRIVER_B, POOL1, DEVICE2),
                config=[
                    DeviceAllocationConfiguration(
                        source="FromClaim", requests=[REQ0_SUB1], opaque=opaque(DRIVER_B, "bar")
                    )
                ],
            )
        ],
    ),
    "prioritized-list-class-config": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_B, 2)),
            )
        ],
        classes=[
            device_class(CLASS_A, DRIVER_A, config="foo"),
            device_class(CLASS_B, DRIVER_B, config="bar"),
        ],
        features=PRIO,
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2)),
            slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE3)),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0_SUB1, DRIVER_B, POOL1, DEVICE1),
                result(REQ0_SUB1, DRIVER_B, POOL1, DEVICE2),
                config=[
                    DeviceAllocationConfiguration(
                        source="FromClass", requests=[REQ0_SUB1], opaque=opaque(DRIVER_B, "bar")
                    )
                ],
            )
        ],
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, selectors=[memory_at_least("1Gi")]),
                first_available(
                    REQ1,
                    sub_request(SUB0, CLASS_A, selectors=[memory_at_least("4Gi")]),
                    sub_request(SUB1, CLASS_A, 2, selectors=[memory_at_least("2Gi")]),
                ),
            )
        ],
        classes=[A],
        features=PRIO,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "2Gi"}),
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE3, {"memory": "1Gi"}),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, selectors=[memory_at_least("8Gi")]),
                first_available(
                    REQ1,
                    sub_request(SUB0, CLASS_A, selectors=[memory_at_least("2Gi")]),
                    sub_request(SUB1, CLASS_A, selectors=[memory_at_least("1Gi")]),
                ),
                constraints=[
                    DeviceConstraint(requests=[REQ0, REQ1], match_attribute=VERSION_ATTRIBUTE)
                ],
            )
        ],
        classes=[A],
        features=PRIO,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "8Gi"}, attrs(driverVersion="v:1.0.0")),
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}, attrs(driverVersion="v:2.0.0")),
                device(DEVICE3, {"memory": "1Gi"}, attrs(driverVersion="v:1.0.0")),
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB1, DRIVER_A, POOL2, DEVICE3),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, selectors=[memory_at_least("8Gi")]),
                first_available(
                    REQ1,
                    sub_request(SUB0, CLASS_A, selectors=[memory_at_least("2Gi")]),
                    sub_request(SUB1, CLASS_A, selectors=[memory_at_least("1Gi")]),
                ),
                constraints=[
                    DeviceConstraint(
                        requests=[REQ0, "req-1/subReq-0"], match_attribute=VERSION_ATTRIBUTE
                    )
                ],
            )
        ],
        classes=[A],
        features=PRIO,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "8Gi"}, attrs(driverVersion="v:1.0.0")),
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}, attrs(driverVersion="v:2.0.0")),
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB1, DRIVER_A, POOL2, DEVICE2),
            )
        ],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 0, allocation_mode="All"),
                    sub_request(SUB1, CLASS_A),
                ),
            )
        ],
        classes=[A],
        features=PRIO,
        allocated=("driver-a/pool-1/device-1",),
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))
        ],
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE2))],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                first_available(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 0, allocation_mode="All"),
                    sub_request(SUB1, CLASS_A),
                ),
            )
        ],
        classes=[A],
        features=PRIO,
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "prioritized-list-disabled": Case(
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_A)))],
        classes=[A],
        slices=one_device(),
        error="claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList "
        "feature is disabled",
    ),
    "prioritized-list-multi-request": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ1, CLASS_A, selectors=[memory_at_least("8Gi")]),
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, selectors=[memory_at_least("8Gi")]),
                    sub_request(SUB1, CLASS_A, selectors=[memory_at_least("4Gi")]),
                ),
            )
        ],
        classes=[A],
        features=PRIO,
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "8Gi"})),
            slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, {"memory": "4Gi"})),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ0_SUB1, DRIVER_A, POOL2, DEVICE2),
            )
        ],
    ),
    **MORE,
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    run_case(case)


def test_distinct_attribute_on_dedicated_devices() -> None:
    """Upstream's ``with-distinct-constraints-with-subrequests`` on devices without
    ``allowMultipleAllocations`` (the shared variant is in test_allocator_capacity):
    req-1 cannot reuse req-0's boolAttribute, so it falls back to its second choice."""
    expr = 'device.attributes["driver-a"].boolAttribute'
    subs = (sub_request(SUB0, CLASS_A, selectors=[selector(expr)]), sub_request(SUB1, CLASS_A))
    run_case(
        Case(
            claims=[
                claim(
                    CLAIM0,
                    first_available(REQ0, *subs),
                    first_available(REQ1, *subs),
                    constraints=[
                        DeviceConstraint(requests=[REQ0, REQ1], distinct_attribute=BOOL_ATTRIBUTE)
                    ],
                )
            ],
            classes=[A],
            features=features(consumable_capacity=True, prioritized_list=True),
            slices=[
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1, None, attrs(boolAttribute=True)),
                    device(DEVICE2, None, attrs(boolAttribute=False)),
                )
            ],
            expect=[
                allocation(
                    LOCAL1,
                    result(REQ0_SUB0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE2),
                )
            ],
        )
    )
