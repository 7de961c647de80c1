"""The builders of test_dynamicresources and the second half of its table (``MORE``, which
the test file's ``CASES`` ends with): one table, two files."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import pytest

from contracts.k8s import DeviceClass, Node, Pod, ResourceClaim, ResourceSlice
from contracts.k8s.resource import (
    FINALIZER,
    AllocationResult,
    CELDeviceSelector,
    DeviceRequest,
    DeviceSelector,
    DeviceSubRequest,
    ResourceClaimConsumerReference,
)
from services.framework.api.status import Code, Status
from services.framework.plugins.dynamicresources import DynamicResourcesArgs
from tests.unit.framework.plugins.dra.plugin_support import (
    ALLOCATION,
    CLAIM_NAME,
    CLASS,
    DRIVER,
    NODE,
    NODE2,
    NODE3,
    POD_NAME,
    POD_UID,
    allocated,
    allocation,
    broken_class,
    claim,
    device_class,
    exactly,
    first_available,
    healthy,
    labelled,
    pod_with_claim_name,
    pod_with_claim_template,
    pod_with_two_claim_names,
    resource_slice,
    tainted,
    with_device_status,
    worker,
)

NOW = 1_800_000_000.0
CEL_RUNTIME_ERROR = (
    "claim default/my-pod-my-resource: selector #0 on device some-driver/worker/instance-1: "
    "CEL runtime error: no such key: healthy. Consider using CEL optional chaining (?), "
    "has() macro, or orValue() for optional fields"
)
"""Upstream's newest text (the device named, the hint appended)."""
DRIVER_2 = "some-driver-2"
HEALTHY = 'device.attributes["some-driver"].healthy'
STAMP = "2027-01-15T08:00:00Z"
U = Code.UnschedulableAndUnresolvable

PENDING = claim(owner=POD_UID)
"""``pendingClaim``: not allocated, generated for the pod."""
ALLOCATED = allocated(PENDING)
"""``allocatedClaim``."""
IN_USE = msgspec.structs.replace(
    ALLOCATED,
    status=msgspec.structs.replace(
        ALLOCATED.status,
        reserved_for=[ResourceClaimConsumerReference(resource="pods", name=POD_NAME, uid=POD_UID)],
    ),
)
"""``inUseClaim``: allocated and reserved for the pod."""
OTHER = claim("not-my-claim")
OTHER_ALLOCATED = allocated(OTHER)
WRONG_TOPOLOGY = allocated(
    ALLOCATED, msgspec.structs.replace(ALLOCATION, node_selector=labelled("no-such-label", "x"))
)
GOOD_TOPOLOGY = allocated(
    ALLOCATED,
    msgspec.structs.replace(ALLOCATION, node_selector=labelled("kubernetes.io/hostname", NODE)),
)
WITH_PRIORITIZED_LIST = claim(
    CLAIM_NAME, first_available("req-1", ("subreq-1", CLASS, 1)), owner=POD_UID
)


CONDITIONS = {"binding_conditions": ["condition"], "binding_failure_conditions": ["failed"]}
WITH_BINDING_CONDITIONS = allocation(("req-1", "instance-1"), **CONDITIONS)
BOUND = with_device_status(
    allocated(PENDING, WITH_BINDING_CONDITIONS), condition="True", failed="False"
)
"""``boundClaim``: the device reports its binding condition met."""
PENDING_2 = claim(f"{CLAIM_NAME}-2", exactly("req-2"), owner=POD_UID)
WITH_BINDING_CONDITIONS_2 = allocation(("req-2", "instance-2"), driver=DRIVER_2, **CONDITIONS)
BOUND_2 = with_device_status(
    allocated(PENDING_2, WITH_BINDING_CONDITIONS_2), condition="True", failed="False"
)
FAILED_BINDING_2 = with_device_status(
    allocated(PENDING_2, WITH_BINDING_CONDITIONS_2), condition="False", failed="True"
)
"""``failedBindingClaim2``."""
TIMED_OUT = with_device_status(
    allocated(
        PENDING,
        msgspec.structs.replace(
            WITH_BINDING_CONDITIONS, allocation_timestamp="2027-01-15T07:49:59Z"
        ),
    ),
    condition1="True",
    condition2="False",
)
"""Allocated 10 minutes and a second before NOW: past the default bindingTimeout."""
TIMED_OUT_NO_CONDITIONS = with_device_status(
    allocated(
        PENDING,
        msgspec.structs.replace(
            WITH_BINDING_CONDITIONS, allocation_timestamp="2027-01-15T07:49:59Z"
        ),
    ),
)
FAILED_BINDING = with_device_status(
    allocated(PENDING, WITH_BINDING_CONDITIONS), condition="False", failed="True"
)
"""``failedBindingClaim``."""
LARGE = claim(CLAIM_NAME, *(exactly(f"req-{i}") for i in range(1, 6)), owner=POD_UID)
"""``largeClaim``: five requests, one more than the node has devices."""
WITH_TWO_PRIORITIZED = claim(
    f"{CLAIM_NAME}-2",
    first_available(
        "req-1",
        ("subreq-1", CLASS, 4),
        ("subreq-2", CLASS, 3),
        ("subreq-3", CLASS, 2),
        ("subreq-4", CLASS, 1),
    ),
    owner=POD_UID,
)
"""``pendingClaim2WithPrioritizedListAndMultipleSubrequests``."""
WITH_PRIORITIZED_LIST_AND_SELECTOR = claim(
    CLAIM_NAME,
    DeviceRequest(
        name="req-1",
        first_available=[
            DeviceSubRequest(
                name="subreq-1",
                device_class_name=CLASS,
                count=1,
                selectors=[DeviceSelector(cel=CELDeviceSelector(expression=HEALTHY))],
            ),
            DeviceSubRequest(name="subreq-2", device_class_name=CLASS, count=1),
        ],
    ),
    owner=POD_UID,
)
"""``pendingClaimWithPrioritizedListAndSelector``."""
WITH_MULTIPLE_PRIORITIZED_REQUESTS = claim(
    CLAIM_NAME,
    first_available("req-1", ("subreq-1", CLASS, 2), ("subreq-2", CLASS, 1)),
    first_available("req-2", ("subreq-1", CLASS, 2), ("subreq-2", CLASS, 1)),
    owner=POD_UID,
)
"""``pendingClaimWithMultiplePrioritizedListRequests``."""


def with_class(c: ResourceClaim, name: str) -> ResourceClaim:
    """Upstream's ``updateDeviceClassName``."""
    requests = []
    for r in c.spec.devices.requests:
        if r.exactly is not None:
            r = msgspec.structs.replace(
                r, exactly=msgspec.structs.replace(r.exactly, device_class_name=name)
            )
        else:
            subs = [msgspec.structs.replace(s, device_class_name=name) for s in r.first_available]
            r = msgspec.structs.replace(r, first_available=subs)
        requests.append(r)
    devices = msgspec.structs.replace(c.spec.devices, requests=requests)
    return msgspec.structs.replace(c, spec=msgspec.structs.replace(c.spec, devices=devices))


def reserved_update(c: ResourceClaim, result: AllocationResult | None = None) -> ResourceClaim:
    """What PreBind publishes for ``c``: its allocation (with the finalizer when newly
    allocated) stamped, and the pod in reservedFor (upstream's ``reserve(claim, pod)``)."""
    meta = c.metadata
    if result is not None:
        meta = msgspec.structs.replace(meta, finalizers=[*meta.finalizers, FINALIZER])
    base = result or c.status.allocation
    assert base is not None
    stamped = msgspec.structs.replace(base, allocation_timestamp=STAMP)
    consumer = ResourceClaimConsumerReference(resource="pods", name=POD_NAME, uid=POD_UID)
    status = msgspec.structs.replace(
        c.status, allocation=stamped, reserved_for=[*c.status.reserved_for, consumer]
    )
    return msgspec.structs.replace(c, metadata=meta, status=status)


def deallocated_update(c: ResourceClaim) -> ResourceClaim:
    """PostFilter's status update of ``c``: allocation, reservedFor and device statuses
    cleared; metadata (the finalizer) as it was."""
    cleared = msgspec.structs.replace(c.status, allocation=None, reserved_for=[], devices=[])
    return msgspec.structs.replace(c, status=cleared)


@dataclass(frozen=True)
class Want:
    preenqueue: Status | None = None
    prefilter: Status | None = None
    filter: dict[str, Status] = field(default_factory=dict)
    """Node → its rejection (others pass)."""
    filter_error: str | None = None
    postfilter: Status | None = None
    deallocated: tuple[ResourceClaim, ...] = ()
    """The claims PostFilter deallocates (ClaimStatusEffects; upstream's ``changes``)."""
    in_flight: tuple[str, ...] = ()
    """Claims Reserve puts in flight."""
    reserved_devices: tuple[str, ...] = ()
    prebind: tuple[ResourceClaim, ...] = ()
    unreserve_before_prebind: bool = False
    scores: dict[str, tuple[int, int]] | None = None
    """Node → (Score, normalized), for the nodes that pass (with two or more)."""


@dataclass(frozen=True)
class Case:
    pod: Pod
    claims: tuple[ResourceClaim, ...] = ()
    classes: tuple[DeviceClass, ...] = ()
    slices: tuple[ResourceSlice, ...] = ()
    nodes: tuple[Node, ...] = (worker(),)
    want: Want = Want()
    gates: tuple[tuple[str, bool], ...] = ()
    """Feature gates set otherwise than their defaults."""
    args: DynamicResourcesArgs | None = None


def status(code: Code, message: str = "") -> Status:
    return Status(code, (message,) if message else ())


MORE = [
    pytest.param(
        Case(
            pod_with_claim_name(),
            (TIMED_OUT,),
            want=Want(
                filter={NODE: status(U, "resourceclaim not available on the node")},
                postfilter=status(Code.Unschedulable, "deallocation of ResourceClaim completed"),
                deallocated=(deallocated_update(TIMED_OUT),),
            ),
        ),
        id="bound-claim-with-mixed-binding-conditions",
    ),
    pytest.param(
        Case(
            pod_with_claim_template(in_status=True),
            (ALLOCATED, OTHER),
            want=Want(prebind=(reserved_update(ALLOCATED),)),
        ),
        id="bound-claim-without-binding-conditions",
    ),
    pytest.param(
        Case(
            pod_with_two_claim_names(),
            (BOUND, BOUND_2),
            (device_class(),),
            want=Want(prebind=(reserved_update(BOUND), reserved_update(BOUND_2))),
        ),
        id="multi-claims-binding-conditions-all-success",
    ),
    pytest.param(
        Case(
            pod_with_two_claim_names(),
            (BOUND, FAILED_BINDING_2),
            (device_class(),),
            want=Want(
                filter={NODE: status(U, "resourceclaim not available on the node")},
                postfilter=status(Code.Unschedulable, "deallocation of ResourceClaim completed"),
                deallocated=(deallocated_update(FAILED_BINDING_2),),
            ),
        ),
        id="multi-claims-binding-conditions-one-fail",
    ),
    pytest.param(
        Case(
            pod_with_two_claim_names(),
            (WITH_PRIORITIZED_LIST, WITH_TWO_PRIORITIZED),
            (device_class(),),
            (
                resource_slice(
                    NODE, DRIVER, "instance-1", "instance-2", "instance-3", "instance-4"
                ),
                resource_slice(NODE2, DRIVER, "instance-1", "instance-2"),
                resource_slice(NODE3, DRIVER, "instance-1"),
            ),
            nodes=(worker(), worker(NODE2), worker(NODE3)),
            want=Want(
                filter={NODE3: status(U, "cannot allocate all claims")},
                scores={NODE: (15, 100), NODE2: (13, 86)},
                in_flight=(CLAIM_NAME, f"{CLAIM_NAME}-2"),
                reserved_devices=tuple(f"some-driver/worker/instance-{i}" for i in (1, 2, 3, 4)),
                prebind=(
                    reserved_update(
                        WITH_PRIORITIZED_LIST, allocation(("req-1/subreq-1", "instance-1"))
                    ),
                    reserved_update(
                        WITH_TWO_PRIORITIZED,
                        allocation(*(("req-1/subreq-2", f"instance-{i}") for i in (2, 3, 4))),
                    ),
                ),
            ),
        ),
        id="multiple-claims-prioritized-list-scoring",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            (device_class(),),
            (tainted(resource_slice(NODE)),),
            want=Want(
                filter={NODE: status(U, "cannot allocate all claims")},
                postfilter=status(Code.Unschedulable, "still not schedulable"),
            ),
        ),
        id="tainted-device-enabled",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            (device_class(),),
            (tainted(resource_slice(NODE)),),
            gates=(("DRADeviceTaints", False),),
            want=Want(
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                prebind=(reserved_update(PENDING, ALLOCATION),),
            ),
        ),
        id="tainted-device-disabled",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            (broken_class(device_class()),),
            (resource_slice(NODE),),
            want=Want(
                filter_error="class my-resource-class: selector #0 on device "
                "some-driver/worker/instance-1: CEL runtime error: no such key: healthy. "
                "Consider using CEL optional chaining (?), has() macro, or orValue() for "
                "optional fields"
            ),
        ),
        id="class-parameters-CEL-runtime-error",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (WITH_PRIORITIZED_LIST_AND_SELECTOR,),
            (device_class(),),
            (healthy(resource_slice(NODE), True), healthy(resource_slice(NODE2), False)),
            nodes=(worker(), worker(NODE2)),
            want=Want(
                scores={NODE: (8, 100), NODE2: (7, 87)},
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                prebind=(
                    reserved_update(
                        WITH_PRIORITIZED_LIST_AND_SELECTOR,
                        allocation(("req-1/subreq-1", "instance-1")),
                    ),
                ),
            ),
        ),
        id="single-claim-prioritized-list-scoring",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (WITH_MULTIPLE_PRIORITIZED_REQUESTS,),
            (device_class(),),
            (
                resource_slice(
                    NODE, DRIVER, "instance-1", "instance-2", "instance-3", "instance-4"
                ),
                resource_slice(NODE2, DRIVER, "instance-1", "instance-2", "instance-3"),
                resource_slice(NODE3, DRIVER, "instance-1", "instance-2"),
            ),
            nodes=(worker(), worker(NODE2), worker(NODE3)),
            want=Want(
                scores={NODE: (16, 100), NODE2: (15, 93), NODE3: (14, 87)},
                in_flight=(CLAIM_NAME,),
                reserved_devices=tuple(f"some-driver/worker/instance-{i}" for i in (1, 2, 3, 4)),
                prebind=(
                    reserved_update(
                        WITH_MULTIPLE_PRIORITIZED_REQUESTS,
                        allocation(
                            ("req-1/subreq-1", "instance-1"),
                            ("req-1/subreq-1", "instance-2"),
                            ("req-2/subreq-1", "instance-3"),
                            ("req-2/subreq-1", "instance-4"),
                        ),
                    ),
                ),
            ),
        ),
        id="multiple-requests-prioritized-list-scoring",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (LARGE,),
            (device_class(),),
            (resource_slice(NODE, DRIVER, *(f"instance-{i}" for i in range(1, 5))),),
            args=DynamicResourcesArgs(filter_timeout="1ns"),
            want=Want(
                filter={NODE: status(U, "timed out trying to allocate devices")},
                postfilter=status(Code.Unschedulable, "still not schedulable"),
            ),
        ),
        id="timeout",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            (device_class(),),
            (resource_slice(NODE),),
            gates=(("DRASchedulerFilterTimeout", False),),
            args=DynamicResourcesArgs(),
            want=Want(
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                prebind=(reserved_update(PENDING, ALLOCATION),),
            ),
        ),
        id="timeout_disabled",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            (device_class(),),
            (resource_slice(NODE),),
            args=DynamicResourcesArgs(filter_timeout="0s"),
            want=Want(
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                prebind=(reserved_update(PENDING, ALLOCATION),),
            ),
        ),
        id="timeout_zero",
    ),
    pytest.param(
        Case(pod_with_claim_name(), (BOUND,), want=Want(prebind=(reserved_update(BOUND),))),
        id="bound-claim-with-succeeded-binding-conditions",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (FAILED_BINDING,),
            slices=(resource_slice(NODE),),
            want=Want(
                filter={NODE: status(U, "resourceclaim not available on the node")},
                postfilter=status(Code.Unschedulable, "deallocation of ResourceClaim completed"),
                deallocated=(deallocated_update(FAILED_BINDING),),
            ),
        ),
        id="bound-claim-with-failed-binding",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (TIMED_OUT_NO_CONDITIONS,),
            want=Want(
                filter={NODE: status(U, "resourceclaim not available on the node")},
                postfilter=status(Code.Unschedulable, "deallocation of ResourceClaim completed"),
                deallocated=(deallocated_update(TIMED_OUT_NO_CONDITIONS),),
            ),
        ),
        id="bound-claim-with-timed-out-binding",
    ),
]
