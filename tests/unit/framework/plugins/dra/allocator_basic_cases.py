"""The builders of test_allocator_basic and the second half of its table (``MORE``, which
the test file's ``CASES`` ends with): one table, two files."""

from __future__ import annotations

from typing import Any

from contracts.k8s import NodeSelector
from contracts.k8s.resource import (
    DeviceAllocationConfiguration,
    DeviceConstraint,
    DeviceRequest,
    DeviceSelector,
    ResourceClaim,
    ResourceSlice,
)
from tests.unit.framework.plugins.dra.support import (
    BOOL_ATTRIBUTE,
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    INT_ATTRIBUTE,
    MAX_RESULTS,
    NODE1,
    POOL1,
    POOL2,
    REGION1,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    STRING_ATTRIBUTE,
    VERSION_ATTRIBUTE,
    Case,
    all_request,
    allocation,
    attrs,
    claim,
    device,
    device_class,
    features,
    label_selector,
    local_node_selector,
    opaque,
    request,
    result,
    selector,
    slice_with_devices,
    slice_with_multiple_devices,
    slice_with_one_device,
)
from tests.unit.framework.plugins.dra.support import (
    claim_config as claim_cfg,
)

A = device_class(CLASS_A, DRIVER_A)
B = device_class(CLASS_B, DRIVER_B)
LOCAL1 = local_node_selector(NODE1)
ADMIN = features(admin_access=True)


def one_device(slice_name: str = SLICE1, where: str | NodeSelector = NODE1) -> list[ResourceSlice]:
    return [slice_with_one_device(slice_name, where, POOL1, DRIVER_A)]


def two_devices() -> list[ResourceSlice]:
    return [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))]


def sized(*sizes: tuple[str, str]) -> list[ResourceSlice]:
    return [
        slice_with_devices(
            SLICE1, NODE1, POOL1, DRIVER_A, *(device(n, {"memory": m}) for n, m in sizes)
        )
    ]


def c0(*requests: DeviceRequest, **more: Any) -> ResourceClaim:
    return claim(CLAIM0, *requests, **more)


MORE: dict[str, Case] = {
    "local-and-network-attached-devices": Case(
        claims=[c0(request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),
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
    "several-different-drivers": Case(
        claims=[c0(request(REQ0, CLASS_A)), c0(request(REQ0, CLASS_B))],
        classes=[A, B],
        slices=[*two_devices(), slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "already-allocated-devices": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[A],
        slices=one_device(),
        allocated=("driver-a/pool-1/device-1", "driver-a/pool-1/device-2"),
    ),
    "admin-access-disabled": Case(
        claims=[c0(request(REQ0, CLASS_A, admin_access=True))],
        classes=[A],
        slices=one_device(),
        error="claim claim-0, request req-0: admin access is requested, but the feature is "
        "disabled",
    ),
    "admin-access-enabled": Case(
        claims=[c0(request(REQ0, CLASS_A, admin_access=True))],
        classes=[A],
        slices=one_device(),
        features=ADMIN,
        allocated=("driver-a/pool-1/device-1", "driver-a/pool-1/device-2"),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))],
    ),
    "with-constraint": Case(
        claims=[
            c0(
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                constraints=[
                    DeviceConstraint(match_attribute=a)
                    for a in (INT_ATTRIBUTE, VERSION_ATTRIBUTE, STRING_ATTRIBUTE, BOOL_ATTRIBUTE)
                ],
            )
        ],
        classes=[A],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                *(
                    device(
                        name,
                        None,
                        attrs(
                            driverVersion="v:1.0.0",
                            numa=1,
                            stringAttribute="stringAttributeValue",
                            boolAttribute=True,
                        ),
                    )
                    for name in (DEVICE1, DEVICE2)
                ),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=[
            c0(
                request(REQ0, CLASS_A),
                constraints=[DeviceConstraint(match_attribute="driver-a/NonExistentAttribute")],
            )
        ],
        classes=[A],
        slices=one_device(),
    ),
    **{
        f"with-constraint-not-matching-{kind}-attribute": Case(
            claims=[
                c0(
                    request(REQ0, CLASS_A, 2),
                    constraints=[DeviceConstraint(match_attribute=f"driver-a/{name}")],
                )
            ],
            classes=[A, B],
            slices=[
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1, None, attrs(**{name: one})),
                    device(DEVICE2, None, attrs(**{name: two})),
                )
            ],
        )
        for kind, name, one, two in (
            ("int", "numa", 1, 2),
            ("string", "stringAttribute", "stringAttributeValue", "stringAttributeValue2"),
            ("bool", "boolAttribute", True, False),
            ("version", "driverVersion", "v:1.0.0", "v:2.0.0"),
        )
    },
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[
            c0(
                all_request(REQ0, CLASS_A),
                constraints=[DeviceConstraint(match_attribute=INT_ATTRIBUTE)],
            )
        ],
        classes=[A, B],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, attrs(numa=1)),
                device(DEVICE2, None, attrs(numa=2)),
            )
        ],
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
        "because a claim constraint would not be satisfied",
    ),
    "with-constraint-for-request": Case(
        claims=[
            c0(
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                constraints=[DeviceConstraint(requests=[REQ0], match_attribute=VERSION_ATTRIBUTE)],
            )
        ],
        classes=[A, B],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, attrs(driverVersion="v:1.0.0")),
                device(DEVICE2, None, attrs(driverVersion="v:2.0.0")),
            )
        ],
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
            c0(
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                constraints=[
                    DeviceConstraint(requests=[REQ0], match_attribute=VERSION_ATTRIBUTE),
                    DeviceConstraint(match_attribute=STRING_ATTRIBUTE),
                ],
            )
        ],
        classes=[A, B],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, attrs(driverVersion="v:1.0.0", stringAttribute="a")),
                device(DEVICE2, None, attrs(driverVersion="v:2.0.0", stringAttribute="b")),
                device(DEVICE3, None, attrs(driverVersion="v:3.0.0", stringAttribute="b")),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
            )
        ],
    ),
    "with-class-device-config": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A, config="classAttribute")],
        slices=one_device(),
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[
                    DeviceAllocationConfiguration(
                        source="FromClass",
                        requests=[REQ0],
                        opaque=opaque(DRIVER_A, "classAttribute"),
                    )
                ],
            )
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[c0(request(REQ0, CLASS_A), request(REQ1, CLASS_A), request(REQ2, CLASS_B))],
        classes=[
            device_class(CLASS_A, DRIVER_A, config="classAttribute-A"),
            device_class(CLASS_B, DRIVER_B, config="classAttribute-B"),
        ],
        slices=[
            slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2),
            slice_with_one_device(SLICE2, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE0),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ2, DRIVER_B, POOL1, DEVICE1),
                config=[
                    DeviceAllocationConfiguration(
                        source="FromClass",
                        requests=[REQ0, REQ1],
                        opaque=opaque(DRIVER_A, "classAttribute-A"),
                    ),
                    DeviceAllocationConfiguration(
                        source="FromClass",
                        requests=[REQ2],
                        opaque=opaque(DRIVER_B, "classAttribute-B"),
                    ),
                ],
            )
        ],
    ),
    "claim-with-device-config": Case(
        claims=[c0(request(REQ0, CLASS_A), config=[claim_cfg([], DRIVER_A, "deviceAttribute")])],
        classes=[A],
        slices=one_device(),
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
    "unknown-selector": Case(
        claims=[c0(request(REQ0, CLASS_A, selectors=[DeviceSelector()]))],
        classes=[A],
        slices=one_device(),
        error="CEL expression empty (unsupported selector type?)",
    ),
    "unknown-allocation-mode": Case(
        claims=[c0(request(REQ0, CLASS_A, allocation_mode="future-mode"))],
        classes=[A],
        slices=one_device(),
        error="unsupported count mode future-mode",
    ),
    "unknown-constraint": Case(
        claims=[c0(request(REQ0, CLASS_A), constraints=[DeviceConstraint()])],
        classes=[A],
        slices=one_device(),
        error="empty constraint (unsupported constraint type?)",
    ),
    "invalid-CEL-one-device": Case(
        claims=[c0(request(REQ0, CLASS_A, selectors=[selector("noSuchVar")]))],
        classes=[A],
        slices=one_device(),
        error="undeclared reference",
    ),
    "invalid-CEL-one-device-class": Case(
        claims=[c0(request(REQ0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A, expression="noSuchVar")],
        slices=one_device(),
        error="undeclared reference",
    ),
    "invalid-CEL-all-devices": Case(
        claims=[c0(all_request(REQ0, CLASS_A, selectors=[selector("noSuchVar")]))],
        classes=[A],
        slices=one_device(),
        error="undeclared reference",
    ),
    "too-many-devices-single-request": Case(
        claims=[c0(request(REQ0, CLASS_A, 500))],
        classes=[A],
        error="exceeds the claim limit",
    ),
    "many-devices-okay": Case(claims=[c0(request(REQ0, CLASS_A, MAX_RESULTS))], classes=[A]),
    "too-many-devices-total": Case(
        claims=[c0(request(REQ0, CLASS_A, MAX_RESULTS), request(REQ1, CLASS_A))],
        classes=[A],
        slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX_RESULTS + 1)],
        error="exceeds the claim limit",
    ),
    "all-devices-invalid-CEL": Case(
        claims=[c0(request(REQ0, CLASS_A, 500))],
        classes=[A],
        error="exceeds the claim limit",
    ),
    "max-number-devices": Case(
        claims=[c0(request(REQ0, CLASS_A, MAX_RESULTS))],
        classes=[A],
        slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX_RESULTS)],
        expect=[
            allocation(
                LOCAL1, *(result(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(MAX_RESULTS))
            )
        ],
    ),
}
