"""A ResourceClaim, a ResourceClaimTemplate and a Pod's claim fields as upstream
validates them (``validateDeviceClaim``, ``ValidateResourceClaimTemplate``,
``validatePodResourceClaims``, ``validateResourceClaimNames``): requests named and
unique, exactly one of ``exactly`` and ``firstAvailable``, a device class, an allocation
mode with its count, constraints and configuration naming existing requests, the
status's ``reservedFor`` consistent; a pod's claims named, unique, each with exactly one
source, and every container claim naming one of them.

CEL selectors are not compiled (see :mod:`.resource`).
"""

from __future__ import annotations

from typing import Final

from contracts.k8s import Container, Pod, ResourceClaim, ResourceClaimTemplate
from contracts.k8s.pod import PodResourceClaim
from contracts.k8s.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceClaim,
    DeviceClaimConfiguration,
    DeviceConstraint,
    DeviceRequest,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
)
from services.informer.validation.meta import Problem, annotation_problems, label_problems, shown
from services.informer.validation.resource import (
    DEVICE_CONFIG_MAX_SIZE,
    dns_label_problems,
    dns_subdomain_problems,
    each,
    fully_qualified_problems,
    invalid,
    not_supported,
    opaque_problems,
    required,
    selectors_problems,
    toleration_problems,
)

DEVICE_REQUESTS_MAX_SIZE: Final = 32
DEVICE_CONSTRAINTS_MAX_SIZE: Final = 32
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE: Final = 8
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE: Final = 256
_ALLOCATION_MODES: Final = (ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT)
_REQUEST_REF: Final = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)

_Names = dict[str, set[str] | None]
"""Request name → its subrequest names (None: an ``exactly`` request)."""


def resource_claim_problems(claim: ResourceClaim) -> list[Problem]:
    found = claim_spec_problems(claim.spec, "spec")
    found += _status_problems(claim.status)
    return found[:1]


def resource_claim_template_problems(template: ResourceClaimTemplate) -> list[Problem]:
    """``validateResourceClaimTemplateSpec``: its object metadata (labels and
    annotations, ``ValidateTemplateObjectMeta``) and its claim spec."""
    meta = template.spec.metadata
    found = label_problems(meta.labels, "spec.metadata.labels")
    found += annotation_problems(meta.annotations, "spec.metadata.annotations")
    found += claim_spec_problems(template.spec.spec, "spec.spec")
    return found[:1]


def claim_spec_problems(spec: ResourceClaimSpec, field: str) -> list[Problem]:
    """``validateDeviceClaim``."""
    devices, at = spec.devices, f"{field}.devices"
    names = _request_names(devices)
    found = each(
        devices.requests,
        DEVICE_REQUESTS_MAX_SIZE,
        _request_problems,
        f"{at}.requests",
        key=lambda r: r.name,
    )
    found += each(
        devices.constraints,
        DEVICE_CONSTRAINTS_MAX_SIZE,
        lambda c, where: _constraint_problems(c, where, names),
        f"{at}.constraints",
    )
    found += each(
        devices.config,
        DEVICE_CONFIG_MAX_SIZE,
        lambda c, where: _config_problems(c, where, names),
        f"{at}.config",
    )
    return found


def _request_names(devices: DeviceClaim) -> _Names:
    return {
        r.name: ({s.name for s in r.first_available} if r.first_available else None)
        for r in devices.requests
    }


def _request_problems(request: DeviceRequest, field: str) -> list[Problem]:
    found = dns_label_problems(request.name, f"{field}.name")
    one_of = "exactly one of `exactly` or `firstAvailable` is required"
    if request.exactly is None and not request.first_available:
        return [*found, required(field, one_of)]
    if request.exactly is not None and request.first_available:
        return [*found, invalid(field, None, f"{one_of}, but multiple fields are set")]
    if request.exactly is not None:
        return found + _exact_problems(request.exactly, f"{field}.exactly")
    return found + each(
        request.first_available,
        FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
        _subrequest_problems,
        f"{field}.firstAvailable",
        key=lambda s: s.name,
    )


def _class_and_mode_problems(
    request: ExactDeviceRequest | DeviceSubRequest, field: str
) -> list[Problem]:
    """What an exact request and a subrequest share: the device class, selectors, the
    allocation mode with its count, tolerations."""
    found = dns_subdomain_problems(request.device_class_name, f"{field}.deviceClassName")
    found += selectors_problems(request.selectors, f"{field}.selectors")
    mode = request.allocation_mode or ALLOCATION_MODE_EXACT_COUNT  # the API's default
    count = request.count
    if mode == ALLOCATION_MODE_ALL:
        if count:
            detail = f"must not be specified when allocationMode is '{mode}'"
            found.append(invalid(f"{field}.count", count, detail))
    elif mode == ALLOCATION_MODE_EXACT_COUNT:
        # 0 is the unset value the API defaults to 1, as an unset count.
        if count is not None and count < 0:
            found.append(invalid(f"{field}.count", count, "must be greater than zero"))
    else:
        found.append(not_supported(f"{field}.allocationMode", mode, _ALLOCATION_MODES))
    for i, toleration in enumerate(request.tolerations):
        found += toleration_problems(toleration, f"{field}.tolerations[{i}]")
    return found


def _exact_problems(request: ExactDeviceRequest, field: str) -> list[Problem]:
    return _class_and_mode_problems(request, field)


def _subrequest_problems(request: DeviceSubRequest, field: str) -> list[Problem]:
    found = dns_label_problems(request.name, f"{field}.name")
    return found + _class_and_mode_problems(request, field)


def _reference_problems(name: str, field: str, names: _Names) -> list[Problem]:
    """``validateRequestNameRef``: ``request`` or ``request/subrequest`` of this claim."""
    segments = name.split("/")
    if len(segments) > 2:
        return [invalid(field, name, _REQUEST_REF)]
    found: list[Problem] = []
    for segment in segments:
        found += dns_label_problems(segment, field)
    request = segments[0]
    known = request in names and (len(segments) == 1 or segments[1] in (names[request] or set()))
    if not known:
        found.append(invalid(field, name, _REQUEST_REF))
    return found


def _references_problems(requests: list[str], field: str, names: _Names) -> list[Problem]:
    return each(
        requests,
        DEVICE_REQUESTS_MAX_SIZE,
        lambda n, where: _reference_problems(n, where, names),
        field,
        key=lambda n: n,
    )


def _constraint_problems(constraint: DeviceConstraint, field: str, names: _Names) -> list[Problem]:
    found = _references_problems(constraint.requests, f"{field}.requests", names)
    if constraint.match_attribute is not None:
        found += fully_qualified_problems(constraint.match_attribute, f"{field}.matchAttribute")
    elif constraint.distinct_attribute is not None:
        found += fully_qualified_problems(
            constraint.distinct_attribute, f"{field}.distinctAttribute"
        )
    else:
        # Upstream's wording with DRAConsumableCapacity on (its default).
        detail = (
            'exactly one of "matchAttribute" or "distinctAttribute" is required, '
            "but multiple fields are set"
        )
        found.append(required(field, detail))
    return found


def _config_problems(config: DeviceClaimConfiguration, field: str, names: _Names) -> list[Problem]:
    found = _references_problems(config.requests, f"{field}.requests", names)
    return found + opaque_problems(config.opaque, field)


def _status_problems(status: ResourceClaimStatus) -> list[Problem]:
    """The invariants of ``validateResourceClaimStatusUpdate`` a claim published whole
    must keep: consumers named and unique by uid, and none without an allocation."""
    found = each(
        status.reserved_for,
        RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
        _consumer_problems,
        "status.reservedFor",
        key=lambda ref: ref.uid,
    )
    if status.reserved_for and status.allocation is None:
        found.append(
            ("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
        )
    return found


def _consumer_problems(ref: ResourceClaimConsumerReference, field: str) -> list[Problem]:
    return [
        required(f"{field}.{name}")
        for name, value in (("resource", ref.resource), ("name", ref.name), ("uid", ref.uid))
        if not value
    ]


# -- the pod's side --------------------------------------------------------------------


def pod_claim_problems(pod: Pod) -> list[Problem]:
    """``validatePodResourceClaims`` and every container's ``validateResourceClaimNames``."""
    found: list[Problem] = []
    names: set[str] = set()
    for i, claim in enumerate(pod.spec.resource_claims):
        found += _pod_claim_problems(claim, f"spec.resourceClaims[{i}]", names)
        if found:
            return found[:1]
    for field, containers in (
        ("spec.containers", pod.spec.containers),
        ("spec.initContainers", pod.spec.init_containers),
    ):
        for i, container in enumerate(containers):
            found += _container_claim_problems(container, f"{field}[{i}].resources.claims", names)
            if found:
                return found[:1]
    return []


def _pod_claim_problems(claim: PodResourceClaim, field: str, names: set[str]) -> list[Problem]:
    found: list[Problem]
    if not claim.name:
        found = [required(f"{field}.name")]
    elif claim.name in names:
        found = [(f"{field}.name", f"Duplicate value: {shown(claim.name)}")]
    else:
        found = dns_label_problems(claim.name, f"{field}.name")
        names.add(claim.name)
    by_name, by_template = claim.resource_claim_name, claim.resource_claim_template_name
    described = "{" + f"name: {claim.name}" + "}"
    if by_name is not None and by_template is not None:
        detail = (
            "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
        )
        found.append(invalid(field, described, detail))
    if by_name is None and by_template is None:
        detail = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
        found.append(invalid(field, described, detail))
    if by_name is not None:
        found += dns_subdomain_problems(by_name, f"{field}.resourceClaimName")
    if by_template is not None:
        found += dns_subdomain_problems(by_template, f"{field}.resourceClaimTemplateName")
    return found


def _container_claim_problems(container: Container, field: str, names: set[str]) -> list[Problem]:
    found: list[Problem] = []
    seen: set[str] = set()
    for i, claim in enumerate(container.resources.claims):
        at = f"{field}[{i}]"
        if not claim.name:
            found.append(required(at))
            continue
        key = f"{claim.name}/{claim.request}" if claim.request else claim.name
        if key in seen:
            found.append((at, f"Duplicate value: {shown(key)}"))
        seen.add(key)
        if claim.name not in names:
            known = ", ".join(sorted(names))
            which = f": {known}" if names else " which is empty"
            detail = f"must be one of the names in pod.spec.resourceClaims{which}"
            found.append((at, f"Not found: {shown(claim.name)}: {detail}"))
    return found
