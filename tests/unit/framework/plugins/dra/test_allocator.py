"""Upstream's allocator table (``structured/internal/allocatortesting``), case by case
under upstream's names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from contracts.k8s import Node
from contracts.k8s.resource import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceClaimConfiguration,
    DeviceClass,
    DeviceConstraint,
    DeviceSelector,
    ResourceClaim,
    ResourceSlice,
)
from services.framework.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocatorFeatures,
)
from tests.unit.framework.plugins.dra.support import (
    ALL_NODES,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    all_request,
    allocate,
    allocation,
    claim,
    device,
    device_class,
    first_available,
    local_node_selector,
    node,
    node_selector,
    opaque,
    request,
    result,
    selector,
    slice_,
    slice_with_one_device,
    sub_request,
    taint,
    toleration,
)


@dataclass
class Case:
    claims: list[ResourceClaim]
    classes: list[DeviceClass]
    slices: list[ResourceSlice]
    node: Node
    expect: list[AllocationResult] | None = None
    error: str | None = None
    allocated: frozenset[str] = frozenset()
    features: AllocatorFeatures = field(default_factory=AllocatorFeatures)


N1 = node(NODE1, REGION1)
A = device_class(CLASS_A, DRIVER_A)
B = device_class(CLASS_B, DRIVER_B)
LOCAL1 = local_node_selector(NODE1)


def two_devices(name: str = SLICE1, nodesel: Any = NODE1, pool: str = POOL1) -> ResourceSlice:
    return slice_(name, nodesel, pool, DRIVER_A, device(DEVICE1), device(DEVICE2))


CASES: dict[str, Case] = {
    "empty": Case(claims=[], classes=[], slices=[], node=N1, expect=[]),
    "simple": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "other-node": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            slice_with_one_device(SLICE1, NODE2, POOL2, DRIVER_A),
        ],
        node=N1,
        expect=None,
    ),
    "no-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=[A], slices=[], node=N1
    ),
    "not-enough-suitable-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
    ),
    "no-classes": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="claim claim-0, request req-0: could not retrieve device class class-a: "
        'deviceclass.resource.k8s.io "class-a" not found',
    ),
    "unknown-class": Case(
        claims=[claim(CLAIM0, request(REQ0, "unknown-class"))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="could not retrieve device class unknown-class",
    ),
    "small-and-large": Case(
        claims=[
            claim(
                CLAIM0,
                request(
                    REQ0,
                    CLASS_A,
                    selectors=[
                        selector(
                            'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'
                        )
                    ],
                ),
                request(
                    REQ1,
                    CLASS_A,
                    selectors=[
                        selector(
                            'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'
                        )
                    ],
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, capacity={"memory": "1Gi"}),
                device(DEVICE2, capacity={"memory": "2Gi"}),
            )
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "small-and-large-backtrack-requests": Case(
        # req-0 takes device-2 first (it fits both), must back off to device-1 for req-1.
        claims=[
            claim(
                CLAIM0,
                request(
                    REQ0,
                    CLASS_A,
                    selectors=[
                        selector(
                            'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'
                        )
                    ],
                ),
                request(
                    REQ1,
                    CLASS_A,
                    selectors=[
                        selector(
                            'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'
                        )
                    ],
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, capacity={"memory": "2Gi"}),
                device(DEVICE1, capacity={"memory": "1Gi"}),
            )
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "small-and-large-backtrack-claims": Case(
        claims=[
            claim(
                CLAIM0,
                request(
                    REQ0,
                    CLASS_A,
                    selectors=[
                        selector(
                            'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'
                        )
                    ],
                ),
            ),
            claim(
                CLAIM1,
                request(
                    REQ1,
                    CLASS_A,
                    selectors=[
                        selector(
                            'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'
                        )
                    ],
                ),
            ),
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, capacity={"memory": "2Gi"}),
                device(DEVICE1, capacity={"memory": "1Gi"}),
            )
        ],
        node=N1,
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ1, DRIVER_A, POOL1, DEVICE2)),
        ],
    ),
    "devices-split-across-different-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
            slice_(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE2), count=2),
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "obsolete-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device("old"), generation=1),
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), generation=2),
        ],
        node=N1,
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "duplicate-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
        ],
        node=N1,
        error="invalid resource pools were encountered",
    ),
    "incomplete-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2)],
        node=N1,
        expect=None,
    ),
    "all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "all-devices-many": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_(SLICE1, NODE1, POOL2, DRIVER_A, device(DEVICE1), device(DEVICE2)),
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE2),
            )
        ],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2)],
        node=N1,
        error="claim claim-0, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently being updated",
    ),
    "all-devices-invalid-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE1))],
        node=N1,
        error="claim claim-0, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently invalid",
    ),
    "all-devices-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))],
        classes=[A, B],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        node=N1,
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "all-devices-plus-another-reversed": Case(
        # The "All" request cannot take device-1 once the other claim holds it.
        claims=[claim(CLAIM1, request(REQ0, CLASS_A)), claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=None,
    ),
    "network-attached-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, node_selector(REGION1), POOL1, DRIVER_A)],
        node=N1,
        expect=[allocation(node_selector(REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, node_selector(REGION2), POOL1, DRIVER_A)],
        node=N1,
        expect=None,
    ),
    "many-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, node_selector(REGION1), POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, ALL_NODES, POOL2, DRIVER_A),
        ],
        node=N1,
        expect=[
            allocation(
                node_selector(REGION1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
    ),
    "local-and-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, node_selector(REGION1), POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
    ),
    "all-nodes-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, ALL_NODES, POOL1, DRIVER_A)],
        node=N1,
        expect=[allocation(None, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "several-different-drivers": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM0, request(REQ0, CLASS_B))],
        classes=[A, B],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        node=N1,
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "already-allocated-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        allocated=frozenset({"driver-a/pool-1/device-1"}),
        expect=None,
    ),
    "admin-access-disabled": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        features=AllocatorFeatures(admin_access=False),
        error="claim claim-0, request req-0: admin access is requested, but the feature is "
        "disabled",
    ),
    "admin-access-enabled": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True)),
            claim(CLAIM1, request(REQ0, CLASS_A, admin_access=True)),
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        allocated=frozenset({"driver-a/pool-1/device-1"}),
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, admin=True)),
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, admin=True)),
        ],
    ),
    "admin-access-same-claim": Case(
        # Admin access may share a device with other claims, never within one claim.
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, admin_access=True),
                request(REQ1, CLASS_A, admin_access=True),
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=None,
    ),
    "with-constraint": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                constraints=[DeviceConstraint(match_attribute="driver-a/numa")],
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"numa": 1}),
                device(DEVICE2, {"numa": 2}),
                device("device-3", {"numa": 1}),
            )
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, "device-3"),
            )
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                constraints=[DeviceConstraint(match_attribute="driver-a/nosuch")],
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=None,
    ),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                constraints=[DeviceConstraint(match_attribute="driver-a/numa")],
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"numa": 1}),
                device(DEVICE2, {"numa": 2}),
            )
        ],
        node=N1,
        expect=None,
    ),
    "with-constraint-not-matching-version-attribute": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                constraints=[DeviceConstraint(match_attribute="driver-a/v")],
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"v": "v:1.0.0"}),
                device(DEVICE2, {"v": "v:2.0.0"}),
            )
        ],
        node=N1,
        expect=None,
    ),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                constraints=[DeviceConstraint(match_attribute="driver-a/s")],
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"s": "a"}),
                device(DEVICE2, {"s": "b"}),
            )
        ],
        node=N1,
        expect=None,
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                constraints=[DeviceConstraint(match_attribute="driver-a/b")],
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"b": True}),
                device(DEVICE2, {"b": False}),
            )
        ],
        node=N1,
        expect=None,
    ),
    "with-constraint-for-request": Case(
        # Only req-0's devices must match; req-1 is free.
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                constraints=[DeviceConstraint(requests=[REQ0], match_attribute="driver-a/numa")],
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"numa": 1}),
                device(DEVICE2, {"numa": 2}),
            )
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "with-constraint-for-request-retry": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                request(
                    REQ1, CLASS_A, selectors=[selector('device.attributes["driver-a"].numa == 1')]
                ),
                constraints=[DeviceConstraint(match_attribute="driver-a/numa")],
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device("device-0", {"numa": 2}),
                device(DEVICE1, {"numa": 1}),
                device(DEVICE2, {"numa": 1}),
            )
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "with-class-device-config": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A, config="classAttribute")],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[
                    DeviceAllocationConfiguration(
                        source="FromClass", opaque=opaque(DRIVER_A, "classAttribute")
                    )
                ],
            )
        ],
    ),
    "claim-with-device-config": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                config=[DeviceClaimConfiguration(opaque=opaque(DRIVER_A, "deviceAttribute"))],
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[
                    DeviceAllocationConfiguration(
                        source="FromClaim", opaque=opaque(DRIVER_A, "deviceAttribute")
                    )
                ],
            )
        ],
    ),
    "class-and-claim-config-for-one-of-two-requests": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_B),
                config=[
                    DeviceClaimConfiguration(requests=[REQ1], opaque=opaque(DRIVER_B, "claimAttr"))
                ],
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A, config="classAttribute"), B],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_B, POOL1, DEVICE1),
                config=[
                    DeviceAllocationConfiguration(
                        source="FromClass",
                        requests=[REQ0],
                        opaque=opaque(DRIVER_A, "classAttribute"),
                    ),
                    DeviceAllocationConfiguration(
                        source="FromClaim", requests=[REQ1], opaque=opaque(DRIVER_B, "claimAttr")
                    ),
                ],
            )
        ],
    ),
    "unknown-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, selectors=[DeviceSelector()]))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="claim claim-0, request req-0, selector #0: CEL expression empty (unsupported "
        "selector type?)",
    ),
    "unknown-allocation-mode": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, allocation_mode="future-mode"))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="unsupported count mode future-mode",
    ),
    "unknown-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), constraints=[DeviceConstraint()])],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="claim claim-0, constraint #0: empty constraint (unsupported constraint type?)",
    ),
    "invalid-CEL-one-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, selectors=[selector("noSuchVar")]))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="claim claim-0: selector #0: CEL compile error: compilation failed: ERROR: "
        "<input>:1:1: undeclared reference to 'noSuchVar' (in container '')",
    ),
    "invalid-CEL-one-device-class": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[
            DeviceClass(
                metadata=A.metadata, spec=A.spec.__class__(selectors=[selector("noSuchVar")])
            )
        ],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="class class-a: selector #0: CEL compile error: compilation failed: ERROR: "
        "<input>:1:1: undeclared reference",
    ),
    "invalid-CEL-all-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, selectors=[selector("noSuchVar")]))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="undeclared reference",
    ),
    "runtime-CEL-errors-skip-devices": Case(
        claims=[
            claim(
                CLAIM0,
                request(
                    REQ0, CLASS_A, selectors=[selector('device.attributes["driver-a"].x == 1')]
                ),
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="claim claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime "
        "error: no such key: x. Consider using CEL optional chaining (?), has() macro, or "
        "orValue() for optional fields",
    ),
    "too-many-devices-single-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="claim claim-0: number of requested devices 500 exceeds the claim limit of 32",
    ),
    "too-many-devices-total": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 16), request(REQ1, CLASS_A, 17))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        error="claim claim-0: number of requested devices 33 exceeds the claim limit of 32",
    ),
    "tainted-two-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[taint("example.com/taint", "NoSchedule")]),
                device(DEVICE2, taints=[taint("example.com/taint", "NoExecute")]),
            )
        ],
        node=N1,
        expect=None,
    ),
    "tainted-one-device-two": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[taint("example.com/taint")]),
                device(DEVICE2),
            )
        ],
        node=N1,
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
    "tainted-none-effect": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[taint("example.com/taint", "None")]),
            )
        ],
        node=N1,
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "tainted-all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[taint("example.com/taint")])
            )
        ],
        node=N1,
        expect=None,
    ),
    "tolerated-tainted-two-devices": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, tolerations=[toleration("example.com/taint")]))
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[taint("example.com/taint")])
            )
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result(
                    REQ0, DRIVER_A, POOL1, DEVICE1, tolerations=[toleration("example.com/taint")]
                ),
            )
        ],
    ),
    "tainted-disabled": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[taint("example.com/taint")])
            )
        ],
        node=N1,
        features=AllocatorFeatures(device_taints=False),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "prioritized-list-first-unavailable": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)),
            )
        ],
        classes=[A, B],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=[allocation(LOCAL1, result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE1))],
    ),
    "prioritized-list-non-available": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A, 2)),
            )
        ],
        classes=[A, B],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=None,
    ),
    "prioritized-list-disabled": Case(
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_A)))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        features=AllocatorFeatures(prioritized_list=False),
        error="claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList "
        "feature is disabled",
    ),
    "prioritized-list-multi-request": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_A)),
                request(REQ1, CLASS_A),
            )
        ],
        classes=[A],
        slices=[two_devices()],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "prioritized-list-with-constraint": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_A), sub_request(SUB1, CLASS_B)),
                request(REQ1, CLASS_B),
                constraints=[
                    DeviceConstraint(
                        requests=["req-0/subReq-1", REQ1], match_attribute="example.com/numa"
                    )
                ],
            )
        ],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1)),
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_B,
                device(DEVICE1, {"example.com/numa": 1}),
                device(DEVICE2, {"example.com/numa": 1}),
            ),
        ],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result("req-0/subReq-0", DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_B, POOL1, DEVICE1),
            )
        ],
    ),
    "prioritized-list-config": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)),
                config=[
                    DeviceClaimConfiguration(
                        requests=["req-0/subReq-1"], opaque=opaque(DRIVER_A, "subAttr")
                    )
                ],
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A, config="classAttribute"), B],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        node=N1,
        expect=[
            allocation(
                LOCAL1,
                result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE1),
                config=[
                    DeviceAllocationConfiguration(
                        source="FromClass", opaque=opaque(DRIVER_A, "classAttribute")
                    ),
                    DeviceAllocationConfiguration(
                        source="FromClaim", opaque=opaque(DRIVER_A, "subAttr")
                    ),
                ],
            )
        ],
    ),
    "per-device-node-selection": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                None,
                POOL1,
                DRIVER_A,
                device(DEVICE1, node_name=NODE2),
                device(DEVICE2, node_name=NODE1),
                per_device=True,
            )
        ],
        node=N1,
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
    "per-device-node-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                None,
                POOL1,
                DRIVER_A,
                device(DEVICE1, node_selector=node_selector(REGION2)),
                device(DEVICE2, node_selector=node_selector(REGION1)),
                per_device=True,
            )
        ],
        node=N1,
        expect=[allocation(node_selector(REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    if case.error is not None:
        with pytest.raises(AllocationError) as caught:
            allocate(
                claims=case.claims,
                classes=case.classes,
                slices=case.slices,
                on=case.node,
                allocated=case.allocated,
                features=case.features,
            )
        assert case.error in str(caught.value)
        return
    got = allocate(
        claims=case.claims,
        classes=case.classes,
        slices=case.slices,
        on=case.node,
        allocated=case.allocated,
        features=case.features,
    )
    assert got == case.expect
