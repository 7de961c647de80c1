"""The builders of test_allocator_prioritized and the second half of its table (``MORE``,
which the test file's ``CASES`` ends with): one table, two files."""

from __future__ import annotations

from contracts.k8s.resource import (
    Device,
    DeviceRequestAllocationResult,
    DeviceTaint,
    DeviceToleration,
    ResourceSlice,
)
from tests.unit.framework.plugins.dra.support import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    MAX_RESULTS,
    NODE1,
    POOL1,
    POOL2,
    REQ0,
    REQ0_SUB1,
    REQ1,
    REQ1_SUB1,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    Case,
    all_request,
    allocation,
    claim,
    device,
    device_class,
    features,
    first_available,
    label_selector,
    local_node_selector,
    many_results,
    memory_at_least,
    request,
    result,
    slice_with_devices,
    slice_with_multiple_devices,
    slice_with_one_device,
    sub_request,
    taint,
    toleration,
    with_tolerations,
)

A = device_class(CLASS_A, DRIVER_A)
B = device_class(CLASS_B, DRIVER_B)
LOCAL1 = local_node_selector(NODE1)
PRIO = features(prioritized_list=True)
TAINTS = features(device_taints=True)
BINDING = features(device_binding=True)

TAINT_NO_SCHEDULE = taint("taint-key", "taint-value", "NoSchedule")
TAINT_NO_EXECUTE = taint("taint-key", "taint-value-2", "NoExecute")
TAINT_NONE = taint("taint-key", "taint-value", "None")
TOLERATE_NO_SCHEDULE = toleration("taint-key", "Exists", "NoSchedule")
TOLERATE_NO_EXECUTE = toleration("taint-key", "Equal", "NoExecute", "taint-value-2")


def one_device() -> list[ResourceSlice]:
    return [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)]


def tainted(*taint_lists: list[DeviceTaint]) -> list[ResourceSlice]:
    names = (DEVICE1, DEVICE2, DEVICE3)
    return [
        slice_with_devices(
            SLICE1,
            NODE1,
            POOL1,
            DRIVER_A,
            *(device(names[i], taints=t) for i, t in enumerate(taint_lists)),
        )
    ]


def with_binding(name: str, ready: list[str] | None, failed: list[str] | None) -> Device:
    return device(name, binding_conditions=ready or [], binding_failure_conditions=failed or [])


def bound(
    request_name: str,
    device_name: str,
    ready: list[str],
    failed: list[str],
    *tol: DeviceToleration,
) -> DeviceRequestAllocationResult:
    return result(
        request_name,
        DRIVER_A,
        POOL1,
        device_name,
        False,
        *tol,
        binding_conditions=ready,
        binding_failure_conditions=failed,
    )


MORE: dict[str, Case] = {
    "prioritized-list-with-backtracking": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, selectors=[memory_at_least("8Gi")]),
                    sub_request(SUB1, CLASS_A, selectors=[memory_at_least("4Gi")]),
                ),
                request(REQ1, CLASS_A, selectors=[memory_at_least("8Gi")]),
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
                result(REQ0_SUB1, DRIVER_A, POOL2, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
            )
        ],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B, 500), sub_request(SUB1, CLASS_A)),
            )
        ],
        classes=[A, B],
        slices=one_device(),
        features=PRIO,
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))],
    ),
    "prioritized-list-allocation-mode-all": Case(
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
        allocated=("driver-a/pool-1/device-2",),
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))
        ],
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))],
    ),
    "prioritized-list-max-allocation-limit-request": Case(
        claims=[
            claim(
                CLAIM0,
                *(
                    first_available(
                        name,
                        sub_request(SUB0, CLASS_A, MAX_RESULTS),
                        sub_request(SUB1, CLASS_A, MAX_RESULTS // 2),
                    )
                    for name in (REQ0, REQ1)
                ),
            )
        ],
        classes=[A],
        features=PRIO,
        slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX_RESULTS * 2)],
        expect=[
            allocation(
                LOCAL1,
                *many_results(REQ0_SUB1, DRIVER_A, POOL1, 16, 0),
                *many_results(REQ1_SUB1, DRIVER_A, POOL1, 16, 16),
            )
        ],
    ),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 0, allocation_mode="All"),
                    sub_request(SUB1, CLASS_A, 2),
                ),
                request(REQ1, CLASS_B, 2),
            )
        ],
        classes=[A, B],
        features=PRIO,
        slices=[
            slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX_RESULTS - 1),
            slice_with_multiple_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2),
        ],
        expect=[
            allocation(
                LOCAL1,
                *many_results(REQ0_SUB1, DRIVER_A, POOL1, 2, 0),
                *many_results(REQ1, DRIVER_B, POOL2, 2, 0),
            )
        ],
    ),
    "tainted-two-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=TAINTS,
        slices=tainted([TAINT_NO_SCHEDULE], [TAINT_NO_EXECUTE]),
    ),
    "tainted-one-device-two-taints": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=TAINTS,
        slices=tainted([TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
    ),
    "tainted-two-devices-tolerated": Case(
        claims=[with_tolerations(claim(CLAIM0, request(REQ0, CLASS_A)), TOLERATE_NO_EXECUTE)],
        classes=[A],
        features=TAINTS,
        slices=tainted([TAINT_NO_SCHEDULE], [TAINT_NO_EXECUTE]),
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2, False, TOLERATE_NO_EXECUTE))
        ],
    ),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A),
                    sub_request(SUB1, CLASS_A, tolerations=[TOLERATE_NO_EXECUTE]),
                ),
            )
        ],
        classes=[A],
        features=features(device_taints=True, prioritized_list=True),
        slices=tainted([TAINT_NO_SCHEDULE], [TAINT_NO_EXECUTE]),
        expect=[
            allocation(
                LOCAL1, result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE2, False, TOLERATE_NO_EXECUTE)
            )
        ],
    ),
    "tainted-no-effect": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=TAINTS,
        slices=tainted([TAINT_NONE]),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        claims=[
            with_tolerations(
                claim(CLAIM0, request(REQ0, CLASS_A)), TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE
            )
        ],
        classes=[A],
        features=TAINTS,
        slices=tainted([TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
        expect=[
            allocation(
                LOCAL1,
                result(
                    REQ0, DRIVER_A, POOL1, DEVICE1, False, TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE
                ),
            )
        ],
    ),
    "tainted-disabled": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=tainted([TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "tainted-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)),
            )
        ],
        classes=[A, B],
        features=features(device_taints=True, prioritized_list=True),
        slices=tainted([TAINT_NO_SCHEDULE]),
    ),
    "tainted-prioritized-list-disabled": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)),
            )
        ],
        classes=[A, B],
        features=PRIO,
        slices=tainted([TAINT_NO_SCHEDULE]),
        expect=[allocation(LOCAL1, result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))],
    ),
    "tainted-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True))],
        classes=[A],
        features=features(device_taints=True, admin_access=True),
        allocated=("driver-a/pool-1/device-1", "driver-a/pool-1/device-2"),
        slices=tainted([TAINT_NO_SCHEDULE]),
    ),
    "tainted-admin-access-disabled": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True))],
        classes=[A],
        features=features(admin_access=True),
        allocated=("driver-a/pool-1/device-1", "driver-a/pool-1/device-2"),
        slices=tainted([TAINT_NO_SCHEDULE]),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))],
    ),
    "tainted-all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        features=TAINTS,
        slices=tainted([TAINT_NO_SCHEDULE]),
    ),
    "tainted-all-devices-single-disabled": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=tainted([TAINT_NO_SCHEDULE]),
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "device-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=BINDING,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_binding(DEVICE1, ["IsPrepare"], ["BindingFailed"]),
            )
        ],
        expect=[allocation(LOCAL1, bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"]))],
    ),
    "binding-conditions-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A))],
        classes=[A],
        features=BINDING,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_binding(DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                with_binding(DEVICE2, ["IsPrepare2"], ["BindingFailed2"]),
                with_binding(DEVICE3, ["IsPrepare3"], ["BindingFailed3"]),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                bound(REQ0, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                bound(REQ0, DEVICE2, ["IsPrepare2"], ["BindingFailed2"]),
                bound(REQ1, DEVICE3, ["IsPrepare3"], ["BindingFailed3"]),
            )
        ],
    ),
    "binding-conditions-with-and-without": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A))],
        classes=[A],
        features=BINDING,
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1),
                with_binding(DEVICE2, ["IsPrepare"], ["BindingFailed"]),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                bound(REQ1, DEVICE2, ["IsPrepare"], ["BindingFailed"]),
            )
        ],
    ),
    "binding-conditions-without-feature-gate": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                with_binding(DEVICE1, ["IsPrepare"], ["BindingFailed"]),
            )
        ],
    ),
    "node-restriction": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[A],
        features=BINDING,
        slices=[
            slice_with_devices(
                SLICE1,
                label_selector("planet", "earth"),
                POOL1,
                DRIVER_A,
                device(DEVICE1, binds_to_node=True),
            )
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
}
