"""``resource.k8s.io/v1``: Dynamic Resource Allocation's DeviceClass, ResourceSlice,
ResourceClaim and ResourceClaimTemplate, shaped as the API's (Kubernetes 1.34+, GA).

A driver publishes its devices in ResourceSlices, grouped in pools; a DeviceClass names a
kind of device by CEL selectors; a ResourceClaim asks for devices (``spec.devices``) and
carries the scheduler's answer (``status.allocation``) and its users
(``status.reservedFor``). A pod names its claims in ``spec.resourceClaims``, directly or
through a ResourceClaimTemplate from which a claim is generated for it.

Not here: what a selector means or how devices are chosen (the DynamicResources plugin
and its allocator, :mod:`services.framework.plugins.dynamicresources`).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from contracts.k8s.base import NodeSelector, ObjectMeta, Quantity, Wire

GROUP: Final = "resource.k8s.io"
API_VERSION: Final = "resource.k8s.io/v1"
ALLOCATION_MODE_EXACT_COUNT: Final = "ExactCount"
ALLOCATION_MODE_ALL: Final = "All"
POD_CLAIM_NAME_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"
"""Set on a claim generated from a template: the pod's ``spec.resourceClaims[].name``."""
GENERATED_BY_ANNOTATION: Final = "ksched.io/generated-claim"
"""ksched's mark on a claim it generated from a template (upstream's resourceclaim
controller does that job in a real cluster)."""
FINALIZER: Final = "resource.kubernetes.io/delete-protection"
EXTENDED_RESOURCE_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"
"""``"true"`` on the claim the scheduler creates for a pod's extended resources backed by
DRA (``ExtendedResourceClaimAnnotation``); the pod controls it."""
EXTENDED_RESOURCE_CLAIM_POD_NAME: Final = "<extended-resources>"
"""Upstream's ``specialClaimInMemName``: how ksched names the extended-resource claim
where a pod's name for a claim is due (simulate's ``podClaim``, ``--explain``); the pod
itself names it only in ``status.extendedResourceClaimStatus``."""
DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
"""``ResourceDeviceClassPrefix``: every DeviceClass is also the extended resource
``deviceclass.resource.kubernetes.io/<class name>`` (its implicit name)."""


# -- shared pieces ----------------------------------------------------------------


class CELDeviceSelector(Wire, kw_only=True, frozen=True):
    expression: str = ""


class DeviceSelector(Wire, kw_only=True, frozen=True):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(Wire, kw_only=True, frozen=True):
    driver: str = ""
    parameters: Any = None


class DeviceToleration(Wire, kw_only=True, frozen=True):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


# -- DeviceClass ------------------------------------------------------------------


class DeviceClassConfiguration(Wire, kw_only=True, frozen=True):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(Wire, kw_only=True, frozen=True):
    selectors: list[DeviceSelector] = []
    config: list[DeviceClassConfiguration] = []
    extended_resource_name: str | None = None
    """The extended resource a pod may request (``example.com/gpu: 1``) to get devices of
    this class (DRAExtendedResource), besides the implicit
    ``deviceclass.resource.kubernetes.io/<class name>``."""


class DeviceClass(Wire, kw_only=True, frozen=True, tag_field="kind", tag="DeviceClass"):
    api_version: str = API_VERSION
    metadata: ObjectMeta = ObjectMeta()
    spec: DeviceClassSpec = DeviceClassSpec()


# -- ResourceSlice ----------------------------------------------------------------


class ResourcePool(Wire, kw_only=True, frozen=True):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class DeviceAttribute(Wire, kw_only=True, frozen=True):
    """Exactly one of the four is set."""

    int_: int | None = msgspec.field(default=None, name="int")
    bool_: bool | None = msgspec.field(default=None, name="bool")
    string: str | None = None
    version: str | None = None


class CapacityRequestPolicyRange(Wire, kw_only=True, frozen=True):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(Wire, kw_only=True, frozen=True):
    default: Quantity | None = None
    valid_values: list[Quantity] = []
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(Wire, kw_only=True, frozen=True):
    value: Quantity = 0
    request_policy: CapacityRequestPolicy | None = None


class Counter(Wire, kw_only=True, frozen=True):
    value: Quantity = 0


class CounterSet(Wire, kw_only=True, frozen=True):
    name: str = ""
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(Wire, kw_only=True, frozen=True):
    counter_set: str = ""
    counters: dict[str, Counter] = {}


class DeviceTaint(Wire, kw_only=True, frozen=True):
    key: str = ""
    value: str | None = None
    effect: str = ""
    time_added: str | None = None


class Device(Wire, kw_only=True, frozen=True):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    allow_multiple_allocations: bool | None = None


class ResourceSliceSpec(Wire, kw_only=True, frozen=True):
    driver: str = ""
    pool: ResourcePool = ResourcePool()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = []
    shared_counters: list[CounterSet] = []


class ResourceSlice(Wire, kw_only=True, frozen=True, tag_field="kind", tag="ResourceSlice"):
    api_version: str = API_VERSION
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceSliceSpec = ResourceSliceSpec()


# -- ResourceClaim ----------------------------------------------------------------


class CapacityRequirements(Wire, kw_only=True, frozen=True):
    requests: dict[str, Quantity] = {}


class ExactDeviceRequest(Wire, kw_only=True, frozen=True):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str | None = None
    """ExactCount (the default) or All."""
    count: int | None = None
    """With ExactCount; 1 when unset."""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(Wire, kw_only=True, frozen=True):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str | None = None
    count: int | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceRequest(Wire, kw_only=True, frozen=True):
    """Exactly one of ``exactly`` and ``first_available`` is set."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(Wire, kw_only=True, frozen=True):
    requests: list[str] = []
    """The requests (or ``request/subrequest``) it applies to; all when empty."""
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(Wire, kw_only=True, frozen=True):
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(Wire, kw_only=True, frozen=True):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(Wire, kw_only=True, frozen=True):
    devices: DeviceClaim = DeviceClaim()


class DeviceRequestAllocationResult(Wire, kw_only=True, frozen=True):
    request: str = ""
    """The request's name, or ``request/subrequest`` for a firstAvailable choice."""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, Quantity] = {}


class DeviceAllocationConfiguration(Wire, kw_only=True, frozen=True):
    source: str = ""
    """FromClass or FromClaim."""
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(Wire, kw_only=True, frozen=True):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(Wire, kw_only=True, frozen=True):
    devices: DeviceAllocationResult = DeviceAllocationResult()
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(Wire, kw_only=True, frozen=True):
    api_group: str | None = None
    """Empty for core (pods)."""
    resource: str = ""
    name: str = ""
    uid: str = ""


class AllocatedDeviceStatus(Wire, kw_only=True, frozen=True):
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[dict[str, Any]] = []
    data: Any = None
    network_data: dict[str, Any] | None = None


class ResourceClaimStatus(Wire, kw_only=True, frozen=True):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ResourceClaim(Wire, kw_only=True, frozen=True, tag_field="kind", tag="ResourceClaim"):
    api_version: str = API_VERSION
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimSpec = ResourceClaimSpec()
    status: ResourceClaimStatus = ResourceClaimStatus()


# -- ResourceClaimTemplate --------------------------------------------------------


class ResourceClaimTemplateSpec(Wire, kw_only=True, frozen=True):
    metadata: ObjectMeta = ObjectMeta()
    """Labels and annotations copied onto each generated claim."""
    spec: ResourceClaimSpec = ResourceClaimSpec()


class ResourceClaimTemplate(
    Wire, kw_only=True, frozen=True, tag_field="kind", tag="ResourceClaimTemplate"
):
    api_version: str = API_VERSION
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimTemplateSpec = ResourceClaimTemplateSpec()
