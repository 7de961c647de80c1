"""Consumable capacity's arithmetic (:mod:`...allocator.capacity`), after upstream's
``consumable_capacity_test.go`` (case names are upstream's), and the allocated state the
shares of allocated claims add up to."""

from __future__ import annotations

from fractions import Fraction

import pytest

from contracts.k8s.resource import (
    AllocationResult,
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Device,
    DeviceAllocationResult,
    DeviceCapacity,
    DeviceRequestAllocationResult,
)
from contracts.quantity import format_quantity
from services.framework.plugins.dynamicresources.allocator.allocated import gather
from services.framework.plugins.dynamicresources.allocator.capacity import (
    CapacityConflict,
    consumed_quantity,
    fits,
    round_up_range,
    violates_policy,
)

CAP0 = "capacity-0"


def q(text: str) -> Fraction:
    """``"250m"`` or ``"2"`` as a fraction."""
    return Fraction(text[:-1]) / 1000 if text.endswith("m") else Fraction(text)


def policy(
    default: str | None = None,
    low: str | None = None,
    high: str | None = None,
    step: str | None = None,
    values: tuple[str, ...] = (),
) -> CapacityRequestPolicy:
    valid_range = None
    if low is not None or high is not None or step is not None:
        valid_range = CapacityRequestPolicyRange(min=low, max=high, step=step)
    return CapacityRequestPolicy(
        default=default, valid_values=list(values), valid_range=valid_range
    )


VIOLATES: dict[str, tuple[str, CapacityRequestPolicy | None, bool]] = {
    "no constraint": ("1", None, False),
    "less than maximum": ("1", policy("1", low="1", high="2"), False),
    "more than maximum": ("2", policy("1", low="1", high="1"), True),
    "in set": ("1", policy("1", values=("1",)), False),
    "not in set": ("2", policy("1", values=("1",)), True),
    "fractional step aligned (0.3 = min+1*step)": (
        "300m",
        policy("200m", low="200m", high="1", step="100m"),
        False,
    ),
    "fractional step not aligned (0.25 is not a multiple of 0.1 from 0.2)": (
        "250m",
        policy("200m", low="200m", high="1", step="100m"),
        True,
    ),
}


@pytest.mark.parametrize(("value", "given", "want"), VIOLATES.values(), ids=VIOLATES.keys())
def test_violates_policy(value: str, given: CapacityRequestPolicy | None, want: bool) -> None:
    assert violates_policy(q(value), given, True) is want


CONSUMED: dict[str, tuple[str | None, str, CapacityRequestPolicy, str]] = {
    "empty": (None, "1", policy(), "1"),
    "min in range": (None, "2", policy("1", low="1"), "1"),
    "default in set": (None, "2", policy("1", values=("1",)), "1"),
    "more than min in range": ("2", "2", policy("1", low="1"), "2"),
    "less than min in range": ("1", "2", policy("1", low="2"), "2"),
    "with step (round up)": ("2", "3", policy("1", low="1", step="2"), "3"),
    "with step (no remaining)": ("2", "2", policy("1", low="1", step="1"), "2"),
    "fractional step round up (0.25 to 0.3)": (
        "250m",
        "1",
        policy("200m", low="200m", high="1", step="100m"),
        "300m",
    ),
    "fractional step already aligned (0.4 = min+2*step)": (
        "400m",
        "1",
        policy("200m", low="200m", high="1", step="100m"),
        "400m",
    ),
    "valid value in set": ("2", "3", policy("1", values=("1", "2", "3")), "2"),
    "set (round up)": ("2", "3", policy("1", values=("1", "3")), "3"),
    "larger than set": ("3", "3", policy("1", values=("1", "2")), "3"),
}


@pytest.mark.parametrize(
    ("requested", "total", "given", "want"), CONSUMED.values(), ids=CONSUMED.keys()
)
def test_calculate_consumed_capacity(
    requested: str | None, total: str, given: CapacityRequestPolicy, want: str
) -> None:
    found = consumed_quantity(None if requested is None else q(requested), q(total), given, True)
    assert found == q(want)


E = 10**18


def test_round_up_range_has_no_integer_overflow() -> None:
    """``TestRoundUpRangeIntegerOverflow``, "result overflows int64": ceil(6E/5E) steps of
    5E make 10E, past int64; exact arithmetic gives it (upstream refuses such a request
    as not representable rather than wrapping). Its other row, operands past int64,
    cannot be written here: ksched's quantities stop at int64, as ``Value()``."""
    valid_range = CapacityRequestPolicyRange(min="0", step="5E")
    assert round_up_range(Fraction(6 * E), valid_range, False) == 10 * E


def test_get_consumed_capacity_from_request() -> None:
    """Requested, defaulted and whole-value capacities, all 1 here; a requested name the
    device publishes is consumed as asked."""
    device = Device(
        name="device-1",
        capacity={
            CAP0: DeviceCapacity(value="2", request_policy=policy("2", low="1")),
            "capacity-1": DeviceCapacity(value="2", request_policy=policy("1", low="1")),
            "dummy": DeviceCapacity(value="1"),
        },
    )
    found = fits(device, "driver-a", {CAP0: "1", "dummy": "1"}, {}, {}, True)
    assert found == {
        "driver-a/capacity-0": 1,
        "driver-a/capacity-1": 1,
        "driver-a/dummy": 1,
    }


def test_capacity_names_resolve_in_the_driver_domain() -> None:
    device = Device(name="d", capacity={"bandwidth": DeviceCapacity(value="10")})
    assert fits(device, "drv", {"drv/bandwidth": "4"}, {}, {}, True) == {"drv/bandwidth": 4}
    assert fits(device, "drv", {"other/bandwidth": "4"}, {}, {}, True) is None
    with pytest.raises(CapacityConflict, match="requested both as"):
        fits(device, "drv", {"bandwidth": "1", "drv/bandwidth": "1"}, {}, {}, True)


def test_fits_adds_allocated_and_allocating() -> None:
    device = Device(name="d", capacity={CAP0: DeviceCapacity(value="4")})
    used = {"drv/capacity-0": Fraction(2)}
    assert fits(device, "drv", {CAP0: "2"}, used, {}, True) == {"drv/capacity-0": 2}
    assert fits(device, "drv", {CAP0: "2"}, used, used, True) is None


def share(device: str, consumed: str | None, share_id: str = "s1") -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult(
        request="r",
        driver="driver-a",
        pool="pool-1",
        device=device,
        share_id=share_id,
        consumed_capacity={CAP0: consumed} if consumed is not None else {},
    )


def test_shares_add_up_per_device() -> None:
    """``insert-remove-allocating-consumed-capacity-collection``: two shares of one
    device add up; a share with nothing consumed still marks the device shared."""
    results = [share("device-1", "1"), share("device-1", "1", "s2"), share("device-2", None)]
    state = gather([AllocationResult(devices=DeviceAllocationResult(results=results))], True)
    assert state.capacity == {"driver-a/pool-1/device-1": {"driver-a/capacity-0": 2}}
    assert state.is_allocated("driver-a/pool-1/device-2")
    assert "driver-a/pool-1/device-1/s2" in state.shares
    assert "driver-a/pool-1/device-1" not in state.devices
    off = gather([AllocationResult(devices=DeviceAllocationResult(results=results))], False)
    assert "driver-a/pool-1/device-1" in off.devices and not off.capacity


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(2), "2"),
        (Fraction(3, 10), "300m"),
        (Fraction(4 * 2**30), "4Gi"),
        (Fraction(0), "0"),
    ],
)
def test_format_quantity(value: Fraction, text: str) -> None:
    assert format_quantity(value) == text
