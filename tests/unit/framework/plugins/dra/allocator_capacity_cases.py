"""The builders of test_allocator_capacity and the second half of its table (``MORE``,
which the test file's ``CASES`` ends with): upstream's consumable-capacity rows
(``withAllowMultipleAllocations``, ``withCapacityRequestPolicyRange``,
``withCapacityRequestPolicyValidValues``, ``withConsumedCapacity``, ...)."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.k8s.resource import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClass,
    DeviceConstraint,
    DeviceRequestAllocationResult,
)
from tests.unit.framework.plugins.dra.support import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    FIXED_SHARE_ID,
    NODE1,
    POOL1,
    REQ0,
    REQ0_SUB0,
    REQ1,
    REQ1_SUB1,
    REQ2,
    SLICE1,
    SLICE2,
    STRING_ATTRIBUTE,
    SUB0,
    SUB1,
    Case,
    allocation,
    attrs,
    claim,
    consumption,
    counter_set,
    device,
    device_class,
    features,
    first_available,
    local_node_selector,
    pool,
    request,
    result,
    selector,
    slice_with_devices,
    sub_request,
)

CAP0, CAP1 = "capacity-0", "capacity-1"
LOCAL1 = local_node_selector(NODE1)
CONSUMABLE = features(consumable_capacity=True)
A = device_class(CLASS_A, DRIVER_A)


def multi_class(allow: bool) -> DeviceClass:
    """``classWithAllowMultipleAllocations``."""
    value = "true" if allow else "false"
    expression = f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == {value}'
    return device_class(CLASS_A, DRIVER_A, expression=expression)


def multi(name: str, capacity: dict[str, str] | None = None, **more: Any) -> Device:
    """``device(...).withAllowMultipleAllocations()``."""
    return device(name, capacity, allow_multiple_allocations=True, **more)


def with_range(d: Device, **capacity: str) -> Device:
    """``withCapacityRequestPolicyRange``: default 2, min 2, step 2, max 4."""
    policy = CapacityRequestPolicy(
        default="2", valid_range=CapacityRequestPolicyRange(min="2", step="2", max="4")
    )
    caps = dict(d.capacity)
    for name, value in capacity.items():
        caps[name.replace("_", "-")] = DeviceCapacity(value=value, request_policy=policy)
    return msgspec.structs.replace(d, capacity=caps)


def with_valid_values(
    d: Device, default: str, extra: tuple[str, ...] = (), **capacity: str
) -> Device:
    """``withCapacityRequestPolicyValidValues``: the default is the first valid value."""
    policy = CapacityRequestPolicy(default=default, valid_values=[default, *extra])
    caps = dict(d.capacity)
    for name, value in capacity.items():
        caps[name.replace("_", "-")] = DeviceCapacity(value=value, request_policy=policy)
    return msgspec.structs.replace(d, capacity=caps)


def shared(request_name: str, device_name: str, **consumed: str) -> DeviceRequestAllocationResult:
    """``deviceRequestAllocationResult(...).withConsumedCapacity(&fixedShareID, ...)``
    in driver-a's pool-1 (``capacity_0`` stands for ``capacity-0``)."""
    return result(
        request_name,
        DRIVER_A,
        POOL1,
        device_name,
        share_id=FIXED_SHARE_ID,
        consumed_capacity={k.replace("_", "-"): v for k, v in consumed.items()},
    )


def one_slice(*devices: Device) -> list[Any]:
    return [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *devices)]


def c(name: str, *requests: Any, constraints: list[DeviceConstraint] | None = None) -> Any:
    return claim(name, *requests, constraints=constraints)


def memory_at_least(amount: str) -> Any:
    return selector(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{amount}")) >= 0')


def cap0_at_least(amount: str) -> Any:
    expression = f'device.capacity["{DRIVER_A}"]["{CAP0}"].compareTo(quantity("{amount}")) >= 0'
    return selector(expression)


MORE: dict[str, Case] = {
    "allow-multiple-allocations-with-partitionable-device": Case(
        claims=[
            c(
                CLAIM0,
                request(REQ0, CLASS_A),
                first_available(
                    REQ1,
                    sub_request(SUB0, CLASS_A, selectors=[memory_at_least("6Gi")]),
                    sub_request(SUB1, CLASS_A, selectors=[memory_at_least("4Gi")]),
                ),
            )
        ],
        classes=[multi_class(True)],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                *(
                    multi(
                        name,
                        consumes=[consumption(COUNTER_SET1, memory=size)],
                        from_counters=True,
                    )
                    for name, size in ((DEVICE1, "4Gi"), (DEVICE2, "6Gi"), (DEVICE3, "4Gi"))
                ),
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                shared_counters=[counter_set(COUNTER_SET1, memory="8Gi")],
            ),
        ],
        features=features(
            prioritized_list=True, partitionable_devices=True, consumable_capacity=True
        ),
        expect=[
            allocation(
                LOCAL1,
                shared(REQ0, DEVICE1, memory="4Gi"),
                shared(REQ1_SUB1, DEVICE3, memory="4Gi"),
            )
        ],
    ),
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        claims=[
            c(
                CLAIM0,
                request(REQ0, CLASS_A, capacity="1"),
                request(REQ2, CLASS_A, capacity="2"),
                first_available(
                    REQ1,
                    sub_request(SUB0, CLASS_A, selectors=[cap0_at_least("4")], capacity="1"),
                    sub_request(SUB1, CLASS_A, selectors=[cap0_at_least("2")], capacity="1"),
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                *(
                    with_range(
                        multi(
                            name,
                            consumes=[
                                consumption(COUNTER_SET1, **{CAP0: size}),
                                consumption(COUNTER_SET2, **{CAP1: "4"}),
                            ],
                            from_counters=True,
                        ),
                        capacity_1="4",
                    )
                    for name, size in ((DEVICE1, "2"), (DEVICE2, "4"), (DEVICE3, "2"))
                ),
            ),
            slice_with_devices(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                shared_counters=[
                    counter_set(COUNTER_SET1, **{CAP0: "4"}),
                    counter_set(COUNTER_SET2, **{CAP1: "8"}),
                ],
            ),
        ],
        features=features(
            prioritized_list=True, partitionable_devices=True, consumable_capacity=True
        ),
        expect=[
            allocation(
                LOCAL1,
                shared(REQ0, DEVICE1, capacity_0="1", capacity_1="2"),
                shared(REQ2, DEVICE3, capacity_0="2", capacity_1="2"),
                shared(REQ1_SUB1, DEVICE1, capacity_0="1", capacity_1="2"),
            )
        ],
    ),
    "with-distinct-constraints": Case(
        claims=[
            c(
                CLAIM0,
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                request(REQ2, CLASS_A),
                request("req-3", CLASS_A),
                constraints=[
                    DeviceConstraint(
                        distinct_attribute="driver-a/boolAttribute", requests=[REQ0, REQ1]
                    ),
                    DeviceConstraint(
                        distinct_attribute="driver-a/driverVersion", requests=[REQ0, REQ1, REQ2]
                    ),
                    DeviceConstraint(
                        distinct_attribute="driver-a/numa",
                        requests=[REQ0, REQ1, REQ2, "req-3"],
                    ),
                ],
            )
        ],
        classes=[A],
        slices=one_slice(
            *(
                multi(
                    f"device-{i}",
                    None,
                    attributes=attrs(driverVersion=f"v:{version}", numa=i - 1, boolAttribute=flag),
                )
                for i, version, flag in (
                    (1, "1.0.0", True),
                    (2, "1.0.1", False),
                    (3, "1.0.2", True),
                    (4, "1.0.0", True),
                )
            )
        ),
        features=CONSUMABLE,
        expect=[
            allocation(
                LOCAL1,
                shared(REQ0, DEVICE1),
                shared(REQ1, DEVICE2),
                shared(REQ2, DEVICE3),
                shared("req-3", "device-4"),
            )
        ],
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        claims=[
            c(
                CLAIM0,
                request(REQ0, CLASS_A),
                constraints=[
                    DeviceConstraint(distinct_attribute="driver-a/boolAttribute", requests=[REQ0])
                ],
            )
        ],
        classes=[A],
        slices=one_slice(multi(DEVICE1)),
        features=CONSUMABLE,
        expect=None,
    ),
    "with-distinct-constraints-unknown-type-attribute": Case(
        claims=[
            c(
                CLAIM0,
                request(REQ0, CLASS_A),
                constraints=[
                    DeviceConstraint(distinct_attribute="driver-a/boolAttribute", requests=[REQ0])
                ],
            )
        ],
        classes=[A],
        slices=one_slice(multi(DEVICE1, attributes={"boolAttribute": DeviceAttribute()})),
        features=CONSUMABLE,
        error="unsupported attribute value",
    ),
    "with-distinct-constraints-with-subrequests": Case(
        claims=[
            c(
                CLAIM0,
                *(
                    first_available(
                        name,
                        sub_request(
                            SUB0,
                            CLASS_A,
                            selectors=[selector(f'device.attributes["{DRIVER_A}"].boolAttribute')],
                        ),
                        sub_request(SUB1, CLASS_A),
                    )
                    for name in (REQ0, REQ1, REQ2)
                ),
                constraints=[
                    DeviceConstraint(
                        distinct_attribute="driver-a/boolAttribute", requests=[REQ0, REQ1]
                    )
                ],
            )
        ],
        classes=[A],
        slices=one_slice(
            multi(DEVICE1, attributes=attrs(boolAttribute=True)),
            multi(DEVICE2, attributes=attrs(boolAttribute=False)),
        ),
        features=features(consumable_capacity=True, prioritized_list=True),
        expect=[
            allocation(
                LOCAL1,
                shared(REQ0_SUB0, DEVICE1),
                shared(REQ1_SUB1, DEVICE2),
                shared("req-2/subReq-0", DEVICE1),
            )
        ],
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        claims=[
            c(
                CLAIM0,
                request(REQ0, CLASS_A, capacity="1"),
                request(REQ1, CLASS_A, capacity="1"),
                constraints=[DeviceConstraint(distinct_attribute=STRING_ATTRIBUTE)],
            )
        ],
        classes=[multi_class(True)],
        slices=one_slice(
            with_range(
                multi(DEVICE1, attributes=attrs(stringAttribute="stringAttributeValue")),
                capacity_0="2",
            )
        ),
        features=CONSUMABLE,
        expect=None,
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        claims=[
            c(
                CLAIM0,
                request(REQ0, CLASS_A, capacity="2"),
                request(REQ1, CLASS_A, capacity="2"),
                constraints=[DeviceConstraint(distinct_attribute=STRING_ATTRIBUTE)],
            )
        ],
        classes=[multi_class(True)],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                with_range(
                    multi(name, attributes=attrs(stringAttribute=f"stringAttributeValue{i}")),
                    capacity_0="4",
                ),
            )
            for i, name in ((1, DEVICE1), (2, DEVICE2))
        ],
        features=CONSUMABLE,
        expect=[
            allocation(
                LOCAL1, shared(REQ0, DEVICE1, capacity_0="2"), shared(REQ1, DEVICE2, capacity_0="2")
            )
        ],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        claims=[
            c(CLAIM0, request(REQ0, CLASS_A, capacity="1")),
            c(CLAIM1, request(REQ0, CLASS_A, capacity="1")),
        ],
        classes=[multi_class(False)],
        slices=one_slice(with_range(device(DEVICE1), capacity_0="2")),
        features=CONSUMABLE,
        expect=None,
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[multi_class(False)],
        slices=one_slice(multi(DEVICE1, {CAP0: "1"})),
        features=CONSUMABLE,
        expect=None,
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": (
        Case(
            claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
            classes=[multi_class(True)],
            slices=one_slice(with_range(multi(DEVICE1), capacity_0="2")),
            allocated=("driver-a/pool-1/device-1",),
            features=CONSUMABLE,
            expect=None,
        )
    ),
    (
        "allow-multiple-allocations-not-allocate-dedicated-"
        "device-which-change-from-multi-allocatable"
    ): (
        Case(
            claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
            classes=[multi_class(True)],
            slices=one_slice(with_range(device(DEVICE1), capacity_0="2")),
            allocated_capacity={"driver-a/pool-1/device-1": {CAP0: "1"}},
            features=CONSUMABLE,
            expect=None,
        )
    ),
}
