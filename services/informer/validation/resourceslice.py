"""A DeviceClass and a ResourceSlice as upstream's ``ValidateDeviceClass`` and
``validateResourceSliceSpec`` check them: selectors and configuration; driver, pool
(name, generation, ``resourceSliceCount`` > 0), exactly one of ``nodeName``,
``nodeSelector``, ``allNodes``, ``perDeviceNodeSelection``; devices (unique DNS-label
names, at most 128, or 64 with taints or counters; qualified attribute names, exactly one
value per attribute, semver versions; a capacity's ``requestPolicy`` only with
``allowMultipleAllocations``, consistent with its value; taints) and shared counter sets.
The shared pieces and messages are :mod:`.resource`.
"""

from __future__ import annotations

import itertools
import math
import re
from fractions import Fraction
from typing import Final

from contracts.k8s import DeviceClass, ResourceSlice
from contracts.k8s.base import Quantity
from contracts.k8s.names import dns1123_subdomain_errors, label_value_errors, qualified_name_errors
from contracts.k8s.resource import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceTaint,
    ResourcePool,
)
from contracts.quantity import QuantityError, format_quantity, parse_quantity
from services.informer.validation.meta import Problem
from services.informer.validation.resource import (
    DEVICE_CONFIG_MAX_SIZE,
    dns_label_problems,
    driver_name_problems,
    each,
    formatted,
    invalid,
    label_name_problems,
    not_supported,
    opaque_problems,
    pool_name_problems,
    qualified_attribute_problems,
    required,
    selectors_problems,
    too_long,
)

DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: Final = 64
RESOURCE_SLICE_MAX_DEVICES: Final = 128
RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES: Final = 64
"""When a device has taints or consumes counters."""
RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE: Final = 32
RESOURCE_SLICE_MAX_COUNTER_SETS: Final = 8
DEVICE_TAINTS_MAX_LENGTH: Final = 16
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS: Final = 10
_TAINT_EFFECTS: Final = ("NoExecute", "NoSchedule", "None")
"""``validDeviceTaintEffects``, sorted as ``sets.List`` prints them."""


def _taint_problems(taint: DeviceTaint, field: str) -> list[Problem]:
    found = (
        label_name_problems(taint.key, f"{field}.key")
        if taint.key
        else [invalid(f"{field}.key", "", "name part must be non-empty")]
    )
    if taint.value:
        found += formatted(f"{field}.value", taint.value, label_value_errors(taint.value))
    if not taint.effect:
        found.append(required(f"{field}.effect"))
    elif taint.effect not in _TAINT_EFFECTS:
        found.append(not_supported(f"{field}.effect", taint.effect, _TAINT_EFFECTS))
    return found


# -- DeviceClass ------------------------------------------------------------------------


def device_class_problems(device_class: DeviceClass) -> list[Problem]:
    """``ValidateDeviceClass`` (the name is checked with the metadata)."""
    spec = device_class.spec
    found = selectors_problems(spec.selectors, "spec.selectors")
    found += each(
        spec.config,
        DEVICE_CONFIG_MAX_SIZE,
        lambda c, at: opaque_problems(c.opaque, at),
        "spec.config",
    )
    name = spec.extended_resource_name
    if name is not None and (not _is_extended_resource_name(name)):
        found.append(
            invalid("spec.extendedResourceName", name, "must be a valid extended resource name")
        )
    return found[:1]


def _is_extended_resource_name(name: str) -> bool:
    """``IsExtendedResourceName``: not native (it has a domain, not ``kubernetes.io``),
    not ``requests.``-prefixed, and ``requests.<name>`` is a qualified name."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False  # a native resource, or a quota name
    return not qualified_name_errors(f"requests.{name}")


# -- ResourceSlice ----------------------------------------------------------------------


def _pool_problems(pool: ResourcePool, field: str) -> list[Problem]:
    found = pool_name_problems(pool.name, f"{field}.name")
    if pool.resource_slice_count <= 0:
        found.append(
            invalid(
                f"{field}.resourceSliceCount",
                pool.resource_slice_count,
                "must be greater than zero",
            )
        )
    if pool.generation < 0:
        found.append(
            invalid(f"{field}.generation", pool.generation, "must be greater than or equal to zero")
        )
    return found


def _node_fields(
    node_name: str | None, selector: object, all_nodes: bool | None, field: str
) -> tuple[list[str], list[Problem]]:
    """Which of nodeName, nodeSelector and allNodes are set, and their own problems."""
    set_fields: list[str] = []
    found: list[Problem] = []
    if node_name is not None:
        if node_name:
            set_fields.append("`nodeName`")
            found += formatted(f"{field}.nodeName", node_name, dns1123_subdomain_errors(node_name))
        else:
            found.append(
                invalid(
                    f"{field}.nodeName", "", "must be either unset or set to a non-empty string"
                )
            )
    if selector is not None:
        set_fields.append("`nodeSelector`")
    if all_nodes is not None:
        if all_nodes:
            set_fields.append("`allNodes`")
        else:
            found.append(
                invalid(f"{field}.allNodes", "false", "must be either unset or set to true")
            )
    return set_fields, found


def resource_slice_problems(resource_slice: ResourceSlice) -> list[Problem]:
    """``validateResourceSliceSpec``."""
    spec = resource_slice.spec
    found = driver_name_problems(spec.driver, "spec.driver")
    found += _pool_problems(spec.pool, "spec.pool")
    set_fields, node_problems = _node_fields(
        spec.node_name, spec.node_selector, spec.all_nodes, "spec"
    )
    found += node_problems
    if spec.node_selector is not None and len(spec.node_selector.node_selector_terms) != 1:
        found.append(
            invalid(
                "spec.nodeSelector.nodeSelectorTerms",
                f"{len(spec.node_selector.node_selector_terms)} terms",
                "must have exactly one node selector term",
            )
        )
    per_device = spec.per_device_node_selection
    if per_device is not None:
        if per_device:
            set_fields.append("`perDeviceNodeSelection`")
        else:
            found.append(
                invalid(
                    "spec.perDeviceNodeSelection", "false", "must be either unset or set to true"
                )
            )
    one_of = (
        "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
        "is required"
    )
    if not set_fields:
        found.append(required("spec", one_of))
    elif len(set_fields) > 1:
        found.append(
            invalid(
                "spec", "{" + ", ".join(set_fields) + "}", f"{one_of}, but multiple fields are set"
            )
        )
    if spec.shared_counters and spec.devices:
        found.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    advanced = any(d.taints or d.consumes_counters for d in spec.devices)
    limit = (
        RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
        if advanced
        else RESOURCE_SLICE_MAX_DEVICES
    )
    found += each(
        spec.devices,
        limit,
        lambda d, at: _device_problems(d, at, per_device=bool(per_device)),
        "spec.devices",
        key=lambda d: d.name,
    )
    found += each(
        spec.shared_counters,
        RESOURCE_SLICE_MAX_COUNTER_SETS,
        lambda c, at: dns_label_problems(c.name, f"{at}.name"),
        "spec.sharedCounters",
        key=lambda c: c.name,
    )
    return found[:1]


def _device_problems(device: Device, field: str, *, per_device: bool) -> list[Problem]:
    found = dns_label_problems(device.name, f"{field}.name")
    total = len(device.attributes) + len(device.capacity)
    limit = RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
    if total > limit:
        detail = f"the total number of attributes and capacities must not exceed {limit}"
        found.append(invalid(field, total, detail))
    for name, attribute in device.attributes.items():
        found += qualified_attribute_problems(name, f"{field}.attributes")
        found += _attribute_problems(attribute, f"{field}.attributes[{name}]")
    shareable = bool(device.allow_multiple_allocations)
    for name, capacity in device.capacity.items():
        found += qualified_attribute_problems(name, f"{field}.capacity")
        found += _capacity_problems(capacity, f"{field}.capacity[{name}]", shareable)
    found += each(device.taints, DEVICE_TAINTS_MAX_LENGTH, _taint_problems, f"{field}.taints")
    if per_device:
        set_fields, node_problems = _node_fields(
            device.node_name, device.node_selector, device.all_nodes, field
        )
        found += node_problems
        if len(set_fields) != 1:
            detail = (
                "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
            )
            found.append(
                required(field, detail)
                if not set_fields
                else invalid(field, "{" + ", ".join(set_fields) + "}", detail)
            )
    elif (
        device.node_name is not None
        or device.node_selector is not None
        or device.all_nodes is not None
    ):
        detail = (
            "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
        )
        found.append(invalid(field, None, detail))
    return found


def _attribute_problems(attribute: DeviceAttribute, field: str) -> list[Problem]:
    """``validateDeviceAttribute``: exactly one value; strings and versions bounded,
    versions semver."""
    values = [
        v
        for v in (attribute.int_, attribute.bool_, attribute.string, attribute.version)
        if v is not None
    ]
    found: list[Problem] = []
    limit = DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH
    if attribute.string is not None and len(attribute.string) > limit:
        found.append(too_long(f"{field}.string", limit))
    if attribute.version is not None:
        if not _SEMVER.fullmatch(attribute.version):
            found.append(
                invalid(
                    f"{field}.version",
                    attribute.version,
                    "must be a string compatible with semver.org spec 2.0.0",
                )
            )
        if len(attribute.version) > limit:
            found.append(too_long(f"{field}.version", limit))
    if len(values) != 1:
        found.append(
            invalid(field, "" if not values else "{…}", "exactly one value must be specified")
        )
    return found


_NUMERIC = r"(0|[1-9]\d*)"
_PRE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"

_SEMVER = re.compile(
    rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRE}(\.{_PRE})*)?(\+{_BUILD}(\.{_BUILD})*)?",
    re.ASCII,
)


# -- consumable capacity ----------------------------------------------------------------


def _capacity_problems(capacity: DeviceCapacity, field: str, shareable: bool) -> list[Problem]:
    """``validateMultiAllocatableDeviceCapacity`` / ``validateSingleAllocatableDeviceCapacity``."""
    policy = capacity.request_policy
    if policy is None:
        return []
    at = f"{field}.requestPolicy"
    if not shareable:
        return [(at, "Forbidden: allowMultipleAllocations must be true")]
    if policy.valid_values and policy.valid_range is not None:
        detail = (
            'exactly one policy can be specified, cannot specify "validValues" and '
            '"validRange" at the same time'
        )
        return [(at, f"Forbidden: {detail}")]
    total = _value(capacity.value)
    if policy.valid_values:
        if policy.default is None:
            return [required(f"{at}.default", "required when validValues is defined")]
        return _valid_values_problems(policy, total, f"{at}.validValues")
    if policy.valid_range is not None:
        if policy.default is None:
            return [required(f"{at}.default", "required when validRange is defined")]
        return _range_problems(_value(policy.default), total, policy.valid_range, at)
    return []


def _value(quantity: Quantity) -> Fraction:
    try:
        return parse_quantity(quantity)
    except QuantityError:
        return Fraction(0)


def _text(value: Fraction) -> str:
    return format_quantity(value)


def _valid_values_problems(
    policy: CapacityRequestPolicy, total: Fraction, field: str
) -> list[Problem]:
    values = [_value(v) for v in policy.valid_values]
    default = _value(policy.default if policy.default is not None else 0)
    found = [
        invalid(f"{field}[{i + 1}]", _text(later), "values must be sorted in ascending order")
        for i, (earlier, later) in enumerate(itertools.pairwise(values))
        if earlier > later
    ]
    found += each(
        values,
        CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS,
        lambda v, at: (
            [invalid(at, _text(v), f"option is larger than capacity value: {_text(total)}")]
            if v > total
            else []
        ),
        field,
        key=lambda v: str(math.ceil(v)),
    )
    if len(values) > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS or default not in values:
        detail = "default value is not valid according to the requestPolicy"
        found.append(invalid(field, _text(default), detail))
    return found


def _range_problems(
    default: Fraction, total: Fraction, valid_range: CapacityRequestPolicyRange, field: str
) -> list[Problem]:
    at = f"{field}.validRange"
    if valid_range.min is None:
        return [required(f"{at}.min", "required when validRange is defined")]
    low = _value(valid_range.min)
    found = []
    if low > total:
        detail = f"min is larger than capacity value: {_text(total)}"
        found.append(invalid(f"{at}.min", _text(low), detail))
    if default < low:
        found.append(
            invalid(f"{at}.min", _text(default), f"default is less than min: {_text(low)}")
        )
    high = None if valid_range.max is None else _value(valid_range.max)
    if high is not None:
        if low > high:
            found.append(invalid(f"{at}.max", _text(low), f"min is larger than max: {_text(high)}"))
        if high > total:
            detail = f"max is larger than capacity value: {_text(total)}"
            found.append(invalid(f"{at}.max", _text(high), detail))
        if default > high:
            detail = f"default is more than max: {_text(high)}"
            found.append(invalid(f"{at}.max", _text(default), detail))
    if valid_range.step is not None:
        step = _value(valid_range.step)
        if low + step > total:
            detail = f"one step {_text(low + step)} is larger than capacity value: {_text(total)}"
            found.append(invalid(f"{at}.step", _text(step), detail))
        for value in (default, *(() if high is None else (high,))):
            found += _step_problems(value, low, step, f"{at}.step")
    return found


def _step_problems(value: Fraction, low: Fraction, step: Fraction, field: str) -> list[Problem]:
    """``validateRequestPolicyRangeStep``: in whole units, each rounded up (``Value()``)."""
    whole = math.ceil(step)
    if whole != 0 and (math.ceil(value) - math.ceil(low)) % whole == 0:
        return []
    detail = f"value is not a multiple of a given step ({_text(step)}) from ({_text(low)})"
    return [invalid(field, _text(value), detail)]
