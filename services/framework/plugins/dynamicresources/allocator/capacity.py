"""Consumable capacity (DRAConsumableCapacity, upstream's ``consumable_capacity.go``):
what a request consumes of each capacity a device publishes, and whether it still fits
next to what others consume.

For every capacity of the device (not only the requested ones), the amount consumed is:

- not requested: the policy's ``default``, else the whole ``value``;
- requested, no ``requestPolicy``: the request;
- requested, ``validRange`` with ``min``: ``min`` when below it, else rounded up to
  ``min + n * step`` (as is without ``step``);
- requested, ``validValues``: the first valid value at least the request (the request
  itself past the last one).

It fits when it does not violate the policy (it is the default, or within ``max`` and on
a step of the range, or one of the valid values) and, added to what allocated claims
and the search's earlier picks consume, stays within ``value``. A device lacking a
requested capacity does not fit.

Names: a request or a device capacity without a domain sits in the driver's domain, so
``bandwidth`` and ``<driver>/bandwidth`` are the same capacity; the device's explicitly
qualified entry wins over its unqualified one, and a request naming one capacity both ways
is refused (the device is skipped). Amounts are kept by the fully qualified name; results
name a capacity as the device publishes it.

Arithmetic is exact (fractions). With DRAFractionalCapacityRange a range whose bounds are
whole thousandths (and whose step is at least ``1m``) is stepped in thousandths, else in
whole units with each quantity rounded up first, as upstream's ``Value()``. Departure:
upstream aborts when a rounded value passes int64; exact arithmetic has no such bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from contracts.k8s.base import Quantity
from contracts.k8s.resource import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Device,
)
from contracts.quantity import QuantityError, format_quantity, parse_quantity

ConsumedCapacity = dict[str, Fraction]
"""Fully qualified capacity name -> amount."""


class CapacityConflict(ValueError):
    """A request names one capacity with and without the driver's domain."""


def qualify(name: str, driver: str) -> str:
    """A capacity name in its domain (the driver's when it has none)."""
    return name if "/" in name else f"{driver}/{name}"


def amount(value: Quantity) -> Fraction:
    """A quantity's exact value; one that does not parse counts as zero (validation
    keeps such objects out)."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return Fraction(0)


def resolve_device_capacity(device: Device, driver: str) -> dict[str, str]:
    """Fully qualified name -> the name the device publishes it under, each capacity
    once (the entry qualified with the driver's own domain wins)."""
    prefix = driver + "/"
    resolved: dict[str, str] = {}
    for name in device.capacity:
        if name.startswith(prefix):
            resolved[name] = name
    for name in device.capacity:
        if name.startswith(prefix):
            continue
        resolved.setdefault(qualify(name, driver), name)
    return resolved


def _resolve_name(name: str, driver: str, capacity: Mapping[str, object]) -> str | None:
    if name in capacity:
        return qualify(name, driver)
    domain, sep, ident = name.partition("/")
    if sep:
        if domain == driver and ident in capacity:
            return name
        return None
    qualified = f"{driver}/{name}"
    return qualified if qualified in capacity else None


def resolve_requests(
    requests: Mapping[str, Quantity], device: Device, driver: str
) -> dict[str, Fraction] | None:
    """The requested amounts by fully qualified name; None when the device lacks one of
    them. Raises :class:`CapacityConflict` for a capacity requested under two names."""
    resolved: dict[str, Fraction] = {}
    for name, value in requests.items():
        key = _resolve_name(name, driver, device.capacity)
        if key is None:
            return None
        if key in resolved:
            ident = key.partition("/")[2]
            other = ident if name == key else key
            raise CapacityConflict(
                f"capacity {ident!r} requested both as {name!r} and as {other!r}"
            )
        resolved[key] = amount(value)
    return resolved


def _milli(value: Fraction) -> int | None:
    """``value`` in whole thousandths, when it is one (upstream's ``safeMilliValue``)."""
    milli = value * 1000
    return int(milli) if milli.denominator == 1 else None


def _use_milli(valid_range: CapacityRequestPolicyRange, fractional: bool) -> bool:
    if not fractional:
        return False
    for bound in (valid_range.min, valid_range.max, valid_range.step):
        if bound is not None and _milli(amount(bound)) is None:
            return False
    if valid_range.step is not None:
        step = _milli(amount(valid_range.step))
        if step is not None and step < 1:
            return False
    return True


def round_up_range(
    requested: Fraction, valid_range: CapacityRequestPolicyRange, fractional: bool
) -> Fraction | None:
    """The request raised to ``min``, then up to the next step; None when it cannot be
    stepped in thousandths (upstream's not-representable error)."""
    low = amount(valid_range.min or 0)
    if requested < low:
        return low
    if valid_range.step is None:
        return requested
    step = amount(valid_range.step)
    if _use_milli(valid_range, fractional):
        milli = _milli(requested)
        if milli is None:
            return None
        low_m, step_m = _milli(low) or 0, _milli(step) or 1
        return Fraction(low_m + step_m * -(-(milli - low_m) // step_m), 1000)
    req_i, low_i, step_i = math.ceil(requested), math.ceil(low), math.ceil(step)
    if step_i <= 0:
        return Fraction(req_i)
    return Fraction(low_i + step_i * -(-(req_i - low_i) // step_i))


def round_up_valid_values(requested: Fraction, values: list[Quantity]) -> Fraction:
    """The first valid value at least the request (validation keeps them ascending)."""
    for value in values:
        parsed = amount(value)
        if requested <= parsed:
            return parsed
    return requested


def consumed_quantity(
    requested: Fraction | None,
    total: Fraction,
    policy: CapacityRequestPolicy | None,
    fractional: bool,
) -> Fraction | None:
    """What one request consumes of one capacity (see the module docstring); None when
    the request cannot be rounded (see :func:`round_up_range`)."""
    if requested is None:
        if policy is not None and policy.default is not None:
            return amount(policy.default)
        return total
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return round_up_range(requested, policy.valid_range, fractional)
    if policy.valid_values:
        return round_up_valid_values(requested, policy.valid_values)
    return requested


def violates_policy(
    value: Fraction, policy: CapacityRequestPolicy | None, fractional: bool
) -> bool:
    if policy is None:
        return False
    if policy.default is not None and value == amount(policy.default):
        return False
    if policy.valid_range is not None:
        return _violates_range(value, policy.valid_range, fractional)
    if policy.valid_values:
        return all(value != amount(v) for v in policy.valid_values)
    return False


def _violates_range(
    value: Fraction, valid_range: CapacityRequestPolicyRange, fractional: bool
) -> bool:
    if valid_range.max is not None and value > amount(valid_range.max):
        return True
    if valid_range.step is None:
        return False
    low, step = amount(valid_range.min or 0), amount(valid_range.step)
    if _use_milli(valid_range, fractional):
        milli = _milli(value)
        if milli is None:
            return True
        return (milli - (_milli(low) or 0)) % (_milli(step) or 1) != 0
    step_i = math.ceil(step)
    if step_i == 0:
        return False
    return (math.ceil(value) - math.ceil(low)) % step_i != 0


def fits(
    device: Device,
    driver: str,
    requests: Mapping[str, Quantity] | None,
    allocated: Mapping[str, Fraction],
    allocating: Mapping[str, Fraction],
    fractional: bool,
) -> ConsumedCapacity | None:
    """What the request would consume of ``device`` (by fully qualified name), or None
    when it does not fit: a capacity missing, a policy violated, or more than ``value``
    with what allocated claims (``allocated``) and earlier picks (``allocating``)
    consume. Raises :class:`CapacityConflict` (see :func:`resolve_requests`)."""
    resolved = resolve_requests(requests, device, driver) if requests else {}
    if resolved is None:
        return None
    consumed: ConsumedCapacity = {}
    for key, name in resolve_device_capacity(device, driver).items():
        capacity = device.capacity[name]
        value = consumed_quantity(
            resolved.get(key), amount(capacity.value), capacity.request_policy, fractional
        )
        if value is None or value < 0:
            return None
        consumed[key] = value
    for key, name in resolve_device_capacity(device, driver).items():
        capacity = device.capacity[name]
        value = consumed[key]
        if violates_policy(value, capacity.request_policy, fractional):
            return None
        total = value + allocated.get(key, 0) + allocating.get(key, 0)
        if total > amount(capacity.value):
            return None
    return consumed


def status_names(device: Device, driver: str, consumed: ConsumedCapacity) -> dict[str, Quantity]:
    """``consumedCapacity`` for a result: each amount under the name the device
    publishes the capacity by (upstream's ``capacityNameForStatus``)."""
    names = resolve_device_capacity(device, driver)
    out: dict[str, Quantity] = {}
    for key, value in consumed.items():
        out[names[key]] = format_quantity(value)
    return out
