"""Upstream's allocator table (``structured/internal/allocatortesting``), first part:
plain devices, counts, "All", node selection, admin access, constraints, configs and
request errors. Case names are upstream's."""

from __future__ import annotations

import pytest

from contracts.k8s import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from tests.unit.framework.plugins.dra.allocator_basic_cases import (
    ADMIN,
    LOCAL1,
    MORE,
    A,
    B,
    c0,
    one_device,
    sized,
    two_devices,
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
    POOL3,
    POOL4,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    Case,
    all_request,
    allocation,
    attrs,
    claim,
    device,
    label_selector,
    local_node_selector,
    memory_at_least,
    node,
    pool,
    request,
    result,
    run_case,
    selector,
    slice_with_devices,
    slice_with_one_device,
)

CASES: dict[str, Case] = {
    "empty": Case(claims=[], expect=[]),
    "simple": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[A],
        slices=one_device(),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "other-node": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            slice_with_one_device(SLICE2, NODE2, POOL2, DRIVER_A),
        ],
        node=node(NODE2, REGION2),
        expect=[allocation(local_node_selector(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "small-and-large": Case(
        claims=[
            c0(
                request(REQ0, CLASS_A, selectors=[memory_at_least("1Gi")]),
                request(REQ1, CLASS_A, selectors=[memory_at_least("2Gi")]),
            )
        ],
        classes=[A],
        slices=sized((DEVICE1, "1Gi"), (DEVICE2, "2Gi")),
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "small-and-large-backtrack-requests": Case(
        claims=[
            c0(
                request(REQ0, CLASS_A, selectors=[memory_at_least("1Gi")]),
                request(REQ1, CLASS_A, selectors=[memory_at_least("2Gi")]),
            )
        ],
        classes=[A],
        slices=sized((DEVICE2, "2Gi"), (DEVICE1, "1Gi")),
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
            c0(request(REQ0, CLASS_A, selectors=[memory_at_least("1Gi")])),
            claim(CLAIM1, request(REQ1, CLASS_A, selectors=[memory_at_least("2Gi")])),
        ],
        classes=[A],
        slices=sized((DEVICE2, "2Gi"), (DEVICE1, "1Gi")),
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ1, DRIVER_A, POOL1, DEVICE2)),
        ],
    ),
    "devices-split-across-different-slices": Case(
        claims=[c0(request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_A),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
    ),
    "obsolete-slice": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(
                "slice-1-obsolete", NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)
            ),
            slice_with_devices(
                "slice-1-obsolete", NODE1, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2)
            ),
        ],
        expect=None,
    ),
    "duplicate-slice": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A),
            slice_with_one_device(SLICE1 + "-2", NODE1, pool(POOL1, 2), DRIVER_A),
        ],
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case(claims=[c0(request(REQ0, CLASS_A))], classes=[A]),
    "not-enough-suitable-devices": Case(
        claims=[c0(request(REQ0, CLASS_A)), c0(request(REQ1, CLASS_A))],
        classes=[A],
        slices=one_device(),
    ),
    "no-classes": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        slices=one_device(),
        error="could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        claims=[c0(request(REQ0, "unknown-class"))],
        classes=[A],
        slices=one_device(),
        error="could not retrieve device class unknown-class",
    ),
    "empty-class": Case(
        claims=[c0(request(REQ0, ""))],
        classes=[A],
        slices=one_device(),
        error="claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    "no-claims-to-allocate": Case(claims=[], classes=[A], slices=one_device(), expect=[]),
    "all-devices-single": Case(
        claims=[c0(all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=one_device(),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "all-devices-many": Case(
        claims=[c0(all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[c0(all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A)],
        error="claim claim-0, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently being updated",
    ),
    "all-devices-plus-another": Case(
        claims=[c0(all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))],
        classes=[A, B],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "all-devices-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B)), c0(all_request(REQ0, CLASS_A))],
        classes=[A, B],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
        ],
    ),
    "all-devices-many-plus-another": Case(
        claims=[c0(all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))],
        classes=[A, B],
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
            ),
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "all-devices-many-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B)), c0(all_request(REQ0, CLASS_A))],
        classes=[A, B],
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
            ),
        ],
    ),
    "all-devices-no-solution": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_A)), c0(all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=one_device(),
    ),
    "all-devices-no-solution-reversed": Case(
        claims=[c0(all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))],
        classes=[A],
        slices=one_device(),
    ),
    "all-devices-slice-without-devices": Case(
        claims=[c0(all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "all-devices-no-slices": Case(claims=[c0(all_request(REQ0, CLASS_A))], classes=[A]),
    "all-devices-some-allocated": Case(
        claims=[c0(all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=two_devices(),
        allocated=("driver-a/pool-1/device-1",),
    ),
    "all-devices-some-allocated-admin-access": Case(
        claims=[c0(all_request(REQ0, CLASS_A, admin_access=True))],
        classes=[A],
        slices=two_devices(),
        allocated=("driver-a/pool-1/device-1",),
        features=ADMIN,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
            )
        ],
    ),
    "all-devices-some-allocating-admin-access": Case(
        claims=[
            c0(
                request(REQ0, CLASS_A, admin_access=True),
                all_request(REQ1, CLASS_A, admin_access=True),
            )
        ],
        classes=[A],
        slices=two_devices(),
        features=ADMIN,
    ),
    "count-devices-some-allocated-admin-access": Case(
        claims=[c0(request(REQ0, CLASS_A, 2, admin_access=True))],
        classes=[A],
        slices=two_devices(),
        allocated=("driver-a/pool-1/device-1",),
        features=ADMIN,
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
            )
        ],
    ),
    "separate-claims-share-device-admin-access": Case(
        claims=[
            c0(request(REQ0, CLASS_A, admin_access=True)),
            claim(CLAIM1, request(REQ0, CLASS_A, admin_access=True)),
        ],
        classes=[A],
        slices=two_devices(),
        features=ADMIN,
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
        ],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        claims=[
            c0(request(REQ0, CLASS_A)),
            claim(CLAIM1, request(REQ0, CLASS_A, admin_access=True)),
        ],
        classes=[A],
        slices=two_devices(),
        features=ADMIN,
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
        ],
    ),
    "network-attached-device": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[A],
        slices=one_device(where=label_selector("region", REGION1)),
        expect=[
            allocation(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))
        ],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[A],
        slices=one_device(where=label_selector("region", REGION1)),
        node=node(NODE2, REGION2),
    ),
    "many-network-attached-devices": Case(
        claims=[c0(request(REQ0, CLASS_A, 4))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, ALL_NODES, POOL2, DRIVER_A),
            slice_with_one_device(SLICE1, label_selector("planet", "earth"), POOL3, DRIVER_A),
            slice_with_one_device(SLICE1, local_node_selector(NODE1), POOL4, DRIVER_A),
        ],
        expect=[
            allocation(
                NodeSelector(
                    node_selector_terms=[
                        NodeSelectorTerm(
                            match_expressions=[
                                NodeSelectorRequirement(
                                    key="region", operator="In", values=[REGION1]
                                ),
                                NodeSelectorRequirement(
                                    key="planet", operator="In", values=["earth"]
                                ),
                            ],
                            match_fields=[
                                NodeSelectorRequirement(
                                    key="metadata.name", operator="In", values=[NODE1]
                                ),
                            ],
                        )
                    ]
                ),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
                result(REQ0, DRIVER_A, POOL3, DEVICE1),
                result(REQ0, DRIVER_A, POOL4, DEVICE1),
            )
        ],
    ),
    **MORE,
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    run_case(case)


def test_ksched_full_error_texts() -> None:
    """Upstream matches substrings; the whole texts, as ksched builds them."""
    for case, text in (
        (
            CASES["no-classes"],
            "claim claim-0, request req-0: could not retrieve device class "
            'class-a: deviceclass.resource.k8s.io "class-a" not found',
        ),
        (
            CASES["invalid-CEL-one-device"],
            "claim claim-0: selector #0: CEL compile error: "
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in "
            "container '')\n | noSuchVar\n | ^",
        ),
        (
            CASES["invalid-CEL-one-device-class"],
            "class class-a: selector #0: CEL compile "
            "error: compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar'",
        ),
        (
            CASES["too-many-devices-total"],
            "claim claim-0: number of requested devices 33 exceeds the claim limit of 32",
        ),
    ):
        run_case(Case(**{**case.__dict__, "error": text}))


def test_runtime_error_names_device_and_selector() -> None:
    case = Case(
        claims=[
            claim(
                CLAIM0,
                request(
                    REQ0,
                    CLASS_A,
                    selectors=[selector('device.attributes["driver-a"].missing == 1')],
                ),
            )
        ],
        classes=[A],
        slices=one_device(),
        error="claim claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime "
        "error: no such key: missing. Consider using CEL optional chaining (?), has() "
        "macro, or orValue() for optional fields",
    )
    run_case(case)


def test_unqualified_attributes_are_in_the_drivers_domain() -> None:
    case = Case(
        claims=[
            claim(
                CLAIM0,
                request(
                    REQ0,
                    CLASS_A,
                    selectors=[
                        selector(
                            'device.attributes["driver-a"].model == "x" && '
                            'device.attributes["other.example.com"].model == "y"'
                        )
                    ],
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, attrs(model="y")),
                device(DEVICE2, None, attrs(**{"model": "x", "other.example.com/model": "y"})),
            )
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    )
    run_case(case)
