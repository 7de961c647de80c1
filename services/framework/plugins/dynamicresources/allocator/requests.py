"""What the search needs to know about one request or subrequest (upstream's
``requestAccessor`` and ``requestData``), claim constraints (``matchAttribute``,
``distinctAttribute``) and device taints against a request's tolerations.

Constraints are monotonic: once one refuses a device, adding more devices will not
make it accept, so the search can stop early. Each successful ``add`` is undone by
exactly one ``remove`` with the same arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from contracts.k8s.base import Quantity
from contracts.k8s.resource import (
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceRequest,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)

NO_SCHEDULE: Final = "NoSchedule"
NO_EXECUTE: Final = "NoExecute"


@dataclass(frozen=True, slots=True)
class RequestView:
    """A request (``exactly``) or a subrequest, seen the same way."""

    name: str
    device_class_name: str
    allocation_mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: tuple[DeviceSelector, ...]
    tolerations: tuple[DeviceToleration, ...]
    capacity: Mapping[str, Quantity] | None = None
    """``capacity.requests`` (DRAConsumableCapacity)."""


def exact_view(request: DeviceRequest) -> RequestView:
    exactly = request.exactly
    assert exactly is not None
    return RequestView(
        name=request.name,
        device_class_name=exactly.device_class_name,
        allocation_mode=exactly.allocation_mode or "ExactCount",
        count=1 if exactly.count is None else exactly.count,
        admin_access=bool(exactly.admin_access),
        has_admin_access=exactly.admin_access is not None,
        selectors=tuple(exactly.selectors),
        tolerations=tuple(exactly.tolerations),
        capacity=exactly.capacity.requests if exactly.capacity is not None else None,
    )


def sub_view(sub: DeviceSubRequest) -> RequestView:
    return RequestView(
        name=sub.name,
        device_class_name=sub.device_class_name,
        allocation_mode=sub.allocation_mode or "ExactCount",
        count=1 if sub.count is None else sub.count,
        admin_access=False,
        has_admin_access=False,
        selectors=tuple(sub.selectors),
        tolerations=tuple(sub.tolerations),
        capacity=sub.capacity.requests if sub.capacity is not None else None,
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A device of a pool relevant to the node (``deviceWithID``)."""

    id: str
    driver: str
    pool: str
    index: int
    slice: ResourceSlice

    @property
    def device(self) -> Device:
        return self.slice.spec.devices[self.index]


@dataclass(slots=True)
class RequestData:
    request: RequestView
    parent: str | None = None
    """The parent request's name, for a subrequest."""
    device_class: DeviceClass | None = None
    num_devices: int = 0
    selected_sub_request: int = 0
    all_devices: list[Candidate] = field(default_factory=list)

    @property
    def request_name(self) -> str:
        if self.parent is not None:
            return f"{self.parent}/{self.request.name}"
        return self.request.name


def kobj(claim: ResourceClaim) -> str:
    """``klog.KObj``: ``namespace/name``, or the name alone."""
    meta = claim.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


# -- taints -----------------------------------------------------------------------


def tolerates(toleration: DeviceToleration, taint: DeviceTaint) -> bool:
    """``resourceclaim.ToleratesTaint``."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    match toleration.operator or "Equal":
        case "Equal":
            return (toleration.value or "") == (taint.value or "")
        case "Exists":
            return True
    return False


def taint_prevents_allocation(
    taints: list[DeviceTaint], tolerations: tuple[DeviceToleration, ...]
) -> bool:
    """Only NoSchedule and NoExecute keep a device out; other effects are ignored."""
    return any(
        taint.effect in (NO_SCHEDULE, NO_EXECUTE)
        and not any(tolerates(t, taint) for t in tolerations)
        for taint in taints
    )


# -- constraints ------------------------------------------------------------------


def lookup_attribute(
    attributes: dict[str, DeviceAttribute], driver: str, name: str
) -> DeviceAttribute | None:
    """A fully qualified attribute, also found by its bare name in the driver's domain."""
    found = attributes.get(name)
    if found is not None:
        return found
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    return attributes.get(ident)


def _attribute_key(attr: DeviceAttribute) -> tuple[str, object] | None:
    if attr.string is not None:
        return ("string", attr.string)
    if attr.int_ is not None:
        return ("int", attr.int_)
    if attr.bool_ is not None:
        return ("bool", attr.bool_)
    if attr.version is not None:
        return ("version", attr.version)
    return None


class Constraint(Protocol):
    def add(self, request: str, sub_request: str, candidate: Candidate) -> bool: ...

    def remove(self, request: str, sub_request: str, candidate: Candidate) -> None: ...


@dataclass(slots=True)
class _Scoped:
    request_names: frozenset[str]

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.request_names:
            return True
        if request in self.request_names:
            return True
        return bool(sub_request) and f"{request}/{sub_request}" in self.request_names


@dataclass(slots=True)
class MatchAttribute(_Scoped):
    """All devices share the attribute's value (string, int, bool or version)."""

    attribute: str
    value: tuple[str, object] | None = None
    num_devices: int = 0

    def add(self, request: str, sub_request: str, candidate: Candidate) -> bool:
        if not self.applies(request, sub_request):
            return True
        attr = lookup_attribute(candidate.device.attributes, candidate.driver, self.attribute)
        if attr is None:
            return False
        key = _attribute_key(attr)
        if self.num_devices == 0:
            self.value, self.num_devices = key, 1
            return True
        if key is None or key != self.value:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str, candidate: Candidate) -> None:
        if self.applies(request, sub_request):
            self.num_devices -= 1


@dataclass(slots=True)
class DistinctAttribute(_Scoped):
    """No two devices share the attribute's value."""

    attribute: str
    seen: dict[tuple[str, object], int] = field(default_factory=dict)

    def add(self, request: str, sub_request: str, candidate: Candidate) -> bool:
        if not self.applies(request, sub_request):
            return True
        attr = lookup_attribute(candidate.device.attributes, candidate.driver, self.attribute)
        key = None if attr is None else _attribute_key(attr)
        if key is None or key in self.seen:
            return False
        self.seen[key] = 1
        return True

    def remove(self, request: str, sub_request: str, candidate: Candidate) -> None:
        if not self.applies(request, sub_request):
            return
        attr = lookup_attribute(candidate.device.attributes, candidate.driver, self.attribute)
        key = None if attr is None else _attribute_key(attr)
        if key is not None:
            self.seen.pop(key, None)
