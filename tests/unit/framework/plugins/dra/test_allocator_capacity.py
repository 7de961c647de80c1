"""Upstream's allocator table, consumable-capacity rows (DRAConsumableCapacity): devices
with ``allowMultipleAllocations`` shared by several requests and claims while capacity
remains, capacity requests rounded by the device's ``requestPolicy``, consumed capacity
of earlier allocations, "All" requests, distinctAttribute. Case names are upstream's;
generated share ids are compared as upstream's ``fixedShareID``."""

from __future__ import annotations

import pytest

from contracts.k8s.resource import DeviceConstraint
from tests.unit.framework.plugins.dra.allocator_capacity_cases import (
    CAP0,
    CAP1,
    CONSUMABLE,
    LOCAL1,
    MORE,
    A,
    c,
    multi,
    multi_class,
    one_slice,
    shared,
    with_range,
    with_valid_values,
)
from tests.unit.framework.plugins.dra.support import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    POOL1,
    REQ0,
    REQ0_SUB1,
    REQ1,
    SUB0,
    SUB1,
    Case,
    all_request,
    allocation,
    attrs,
    device,
    features,
    first_available,
    request,
    result,
    run_case,
    sub_request,
)

DEVICE_1 = "driver-a/pool-1/device-1"

CASES: dict[str, Case] = {
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[A],
        slices=one_slice(multi(DEVICE1, {CAP1: "1"})),
        features=CONSUMABLE,
        expect=None,
    ),
    (
        "consumable-capacity-multi-allocatable-device-allocation-"
        "mode-all-with-missing-capacity-request"
    ): (
        Case(
            claims=[c(CLAIM0, all_request(REQ0, CLASS_A, capacity="1"))],
            classes=[multi_class(True)],
            slices=one_slice(multi(DEVICE1, {CAP1: "1"})),
            features=CONSUMABLE,
            expect=None,
        )
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": (
        Case(
            claims=[c(CLAIM0, request(REQ0, CLASS_A)), c(CLAIM1, request(REQ0, CLASS_A))],
            classes=[multi_class(True)],
            slices=one_slice(multi(DEVICE1)),
            features=CONSUMABLE,
            expect=[
                allocation(LOCAL1, shared(REQ0, DEVICE1)),
                allocation(LOCAL1, shared(REQ0, DEVICE1)),
            ],
        )
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": (
        Case(
            claims=[c(CLAIM0, request(REQ0, CLASS_A)), c(CLAIM1, request(REQ0, CLASS_A))],
            classes=[multi_class(True)],
            slices=one_slice(multi(DEVICE1, {CAP0: "1"}), multi(DEVICE2, {CAP0: "1"})),
            features=CONSUMABLE,
            expect=[
                allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="1")),
                allocation(LOCAL1, shared(REQ0, DEVICE2, capacity_0="1")),
            ],
        )
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": (
        Case(
            claims=[c(CLAIM0, request(REQ0, CLASS_A)), c(CLAIM1, request(REQ0, CLASS_A))],
            classes=[multi_class(True)],
            slices=one_slice(multi(DEVICE1, {CAP0: "2"})),
            features=CONSUMABLE,
            expect=None,
        )
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        claims=[
            c(CLAIM0, request(REQ0, CLASS_A, capacity="1")),
            c(CLAIM1, request(REQ0, CLASS_A, capacity="1")),
        ],
        classes=[multi_class(True)],
        slices=one_slice(multi(DEVICE1, {CAP0: "2"})),
        features=CONSUMABLE,
        expect=[
            allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="1")),
            allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="1")),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A)), c(CLAIM1, request(REQ0, CLASS_A))],
        classes=[multi_class(True)],
        slices=one_slice(with_range(multi(DEVICE1), capacity_0="4")),
        features=CONSUMABLE,
        expect=[
            allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="2")),
            allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="2")),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A)), c(CLAIM1, request(REQ0, CLASS_A))],
        classes=[multi_class(True)],
        slices=one_slice(with_valid_values(multi(DEVICE1), "0", capacity_0="1")),
        features=CONSUMABLE,
        expect=[
            allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="0")),
            allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="0")),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[multi_class(True)],
        slices=one_slice(with_valid_values(multi(DEVICE1), "0", capacity_0="1")),
        features=CONSUMABLE,
        expect=None,
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        claims=[
            c(CLAIM0, request(REQ0, CLASS_A, capacity="1")),
            c(CLAIM1, request(REQ0, CLASS_A, capacity="1")),
        ],
        classes=[multi_class(True)],
        slices=one_slice(with_range(multi(DEVICE1), capacity_0="4")),
        features=CONSUMABLE,
        expect=[
            allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="2")),
            allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="2")),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="3"))],
        classes=[multi_class(True)],
        slices=one_slice(with_range(multi(DEVICE1), capacity_0="4")),
        features=CONSUMABLE,
        expect=[allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="4"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        classes=[multi_class(True)],
        slices=one_slice(with_valid_values(multi(DEVICE1), "1", ("2",), capacity_0="4")),
        features=CONSUMABLE,
        expect=[allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        classes=[multi_class(True)],
        slices=one_slice(with_valid_values(multi(DEVICE1), "1", ("3",), capacity_0="3")),
        features=CONSUMABLE,
        expect=[allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="3"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": (
        Case(
            claims=[
                c(CLAIM0, request(REQ0, CLASS_A, capacity="1")),
                c(CLAIM1, request(REQ0, CLASS_A, capacity="2")),
            ],
            classes=[multi_class(True)],
            slices=one_slice(with_range(multi(DEVICE1), capacity_0="2")),
            features=CONSUMABLE,
            expect=None,
        )
    ),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="6"))],
        classes=[multi_class(True)],
        slices=one_slice(with_range(multi(DEVICE1), capacity_0="10")),
        features=CONSUMABLE,
        expect=None,
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        allocated_capacity={DEVICE_1: {CAP0: "2"}},
        classes=[multi_class(True)],
        slices=one_slice(with_range(multi(DEVICE1), capacity_0="4")),
        features=CONSUMABLE,
        expect=[allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        allocated_capacity={DEVICE_1: {CAP0: "2"}},
        classes=[multi_class(True)],
        slices=one_slice(
            with_range(multi(DEVICE1), capacity_0="2"), with_range(multi(DEVICE2), capacity_0="2")
        ),
        features=CONSUMABLE,
        expect=[allocation(LOCAL1, shared(REQ0, DEVICE2, capacity_0="2"))],
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        claims=[
            c(
                CLAIM0,
                request(REQ0, CLASS_A, capacity="2"),
                request(REQ1, CLASS_A, capacity="2"),
                constraints=[DeviceConstraint(match_attribute="driver-a/stringAttribute")],
            ),
            c(CLAIM1, request(REQ0, CLASS_A, capacity="2")),
        ],
        classes=[A],
        slices=one_slice(
            with_range(
                multi(DEVICE2, attributes=attrs(stringAttribute="stringAttributeValue1")),
                capacity_0="2",
            ),
            with_range(
                multi(DEVICE1, attributes=attrs(stringAttribute="stringAttributeValue2")),
                capacity_0="4",
            ),
        ),
        features=CONSUMABLE,
        expect=[
            allocation(
                LOCAL1,
                shared(REQ0, DEVICE1, capacity_0="2"),
                shared(REQ1, DEVICE1, capacity_0="2"),
            ),
            allocation(LOCAL1, shared(REQ0, DEVICE2, capacity_0="2")),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        claims=[
            c(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, capacity="4"),
                    sub_request(SUB1, CLASS_A, capacity="2"),
                    sub_request(SUB1, CLASS_A),
                ),
            )
        ],
        classes=[multi_class(True)],
        slices=one_slice(with_range(multi(DEVICE1), capacity_0="2")),
        features=features(consumable_capacity=True, prioritized_list=True),
        expect=[allocation(LOCAL1, shared(REQ0_SUB1, DEVICE1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        allocated_capacity={DEVICE_1: {CAP0: "2"}},
        classes=[multi_class(True)],
        slices=one_slice(with_range(multi(DEVICE1), capacity_0="2")),
        features=CONSUMABLE,
        expect=None,
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": (
        Case(
            claims=[c(CLAIM0, all_request(REQ0, CLASS_A, capacity="2"))],
            classes=[multi_class(True)],
            slices=one_slice(multi(DEVICE1, {CAP0: "2"}), multi(DEVICE2)),
            features=CONSUMABLE,
            expect=[allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="2"))],
        )
    ),
    (
        "consumable-capacity-multi-allocatable-device-allocation-"
        "mode-all-filter-out-insufficient-capacity"
    ): (
        Case(
            claims=[c(CLAIM0, all_request(REQ0, CLASS_A, capacity="2"))],
            classes=[multi_class(True)],
            slices=one_slice(multi(DEVICE1, {CAP0: "2"}), multi(DEVICE2, {CAP0: "1"})),
            features=CONSUMABLE,
            expect=[allocation(LOCAL1, shared(REQ0, DEVICE1, capacity_0="2"))],
        )
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": (
        Case(
            claims=[
                c(
                    CLAIM0,
                    request(REQ0, CLASS_A, capacity="1"),
                    all_request(REQ1, CLASS_A, capacity="1"),
                )
            ],
            classes=[A],
            slices=one_slice(multi(DEVICE1, {CAP0: "2"}), multi(DEVICE2, {CAP0: "1"})),
            features=CONSUMABLE,
            expect=[
                allocation(
                    LOCAL1,
                    shared(REQ0, DEVICE1, capacity_0="1"),
                    shared(REQ1, DEVICE1, capacity_0="1"),
                    shared(REQ1, DEVICE2, capacity_0="1"),
                )
            ],
        )
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        claims=[c(CLAIM0, all_request(REQ0, CLASS_A, capacity="1"))],
        allocated_capacity={DEVICE_1: {CAP0: "1"}},
        classes=[A],
        slices=one_slice(multi(DEVICE1, {CAP0: "2"}), multi(DEVICE2, {CAP0: "1"})),
        features=CONSUMABLE,
        expect=[
            allocation(
                LOCAL1,
                shared(REQ0, DEVICE1, capacity_0="1"),
                shared(REQ0, DEVICE2, capacity_0="1"),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": (
        Case(
            claims=[
                c(
                    CLAIM0,
                    request(REQ0, CLASS_A, capacity="1"),
                    all_request(REQ1, CLASS_A, capacity="1"),
                )
            ],
            classes=[A],
            slices=one_slice(multi(DEVICE1, {CAP0: "1"}), multi(DEVICE2, {CAP0: "1"})),
            features=CONSUMABLE,
            expect=None,
        )
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": (
        Case(
            claims=[c(CLAIM0, all_request(REQ0, CLASS_A, capacity="1"))],
            allocated_capacity={DEVICE_1: {CAP0: "1"}},
            classes=[A],
            slices=one_slice(multi(DEVICE1, {CAP0: "1"}), multi(DEVICE2, {CAP0: "1"})),
            features=CONSUMABLE,
            expect=[allocation(LOCAL1, shared(REQ0, DEVICE2, capacity_0="1"))],
        )
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        claims=[c(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[multi_class(False)],
        slices=one_slice(device(DEVICE1, {CAP0: "1"})),
        features=CONSUMABLE,
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    **MORE,
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    run_case(case)


def test_gate_off_takes_a_shareable_device_whole() -> None:
    """With DRAConsumableCapacity off, ``allowMultipleAllocations`` means nothing: the
    device is given once, with no share id (the second claim finds it taken)."""
    base = CASES[
        "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request"
    ]
    run_case(
        Case(
            claims=base.claims[:1],
            classes=[A],
            slices=base.slices,
            expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        )
    )
    run_case(
        Case(claims=base.claims, classes=[A], slices=base.slices, features=features(), expect=None)
    )
