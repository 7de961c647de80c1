"""What allocated ResourceClaims hold, as the allocator needs it (upstream's
``AllocatedState``): devices taken exclusively, shares of devices that allow multiple
allocations, and the capacity those shares consume per device.

A result with ``adminAccess`` holds nothing. With DRAConsumableCapacity a result with a
``shareID`` is a share (its ``consumedCapacity`` added to the device's); without it, and
for every other result, the device is taken exclusively. Most clusters have no shares:
:data:`EMPTY_CAPACITY` then keeps the allocator's questions a lookup in an empty dict.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from contracts.k8s.resource import AllocationResult, DeviceRequestAllocationResult
from services.common.k8s.devices import exclusive_devices
from services.framework.plugins.dynamicresources.allocator import device_id
from services.framework.plugins.dynamicresources.allocator.capacity import amount, qualify

EMPTY_CAPACITY: Final[Mapping[str, Mapping[str, Fraction]]] = {}


@dataclass(frozen=True, slots=True)
class AllocatedState:
    devices: Container[str] = frozenset()
    """Devices (``driver/pool/device``) taken exclusively (``AllocatedDevices``)."""
    shares: Container[str] = frozenset()
    """Shares, ``driver/pool/device/shareID`` (``AllocatedSharedDeviceIDs``)."""
    shared_devices: Container[str] = frozenset()
    """The devices of :attr:`shares`."""
    capacity: Mapping[str, Mapping[str, Fraction]] = field(default_factory=dict)
    """Per device, fully qualified capacity name -> amount the shares consume
    (``AggregatedCapacity``); only devices whose shares consume something."""

    def is_allocated(self, device: str) -> bool:
        """``IsDeviceAllocated``: taken exclusively or shared (its counters are used)."""
        return device in self.devices or device in self.shared_devices or device in self.capacity


def share_id(device: str, share: str) -> str:
    """``SharedDeviceID.String()``."""
    return f"{device}/{share}" if share else device


def is_share(result: DeviceRequestAllocationResult, consumable: bool) -> bool:
    return consumable and result.share_id is not None


def consumed(result: DeviceRequestAllocationResult) -> dict[str, Fraction]:
    """A share's ``consumedCapacity`` by fully qualified name."""
    return {qualify(name, result.driver): amount(v) for name, v in result.consumed_capacity.items()}


@dataclass(slots=True)
class SharesBuilder:
    """Collects shares into the parts of an :class:`AllocatedState`."""

    shares: set[str] = field(default_factory=set)
    devices: set[str] = field(default_factory=set)
    capacity: dict[str, dict[str, Fraction]] = field(default_factory=dict)

    def add(self, result: DeviceRequestAllocationResult) -> None:
        device = device_id(result.driver, result.pool, result.device)
        self.shares.add(share_id(device, result.share_id or ""))
        self.devices.add(device)
        if result.consumed_capacity:
            into = self.capacity.setdefault(device, {})
            for name, value in consumed(result).items():
                into[name] = into.get(name, Fraction(0)) + value

    def state(self, exclusive: Container[str]) -> AllocatedState:
        if not self.devices:
            return AllocatedState(devices=exclusive, capacity=EMPTY_CAPACITY)
        return AllocatedState(
            devices=exclusive,
            shares=frozenset(self.shares),
            shared_devices=frozenset(self.devices),
            capacity=self.capacity,
        )


def shares(
    allocation: AllocationResult | None, consumable: bool
) -> tuple[DeviceRequestAllocationResult, ...]:
    """The allocation's shares (empty without DRAConsumableCapacity)."""
    if allocation is None or not consumable:
        return ()
    return tuple(
        r for r in allocation.devices.results if not r.admin_access and r.share_id is not None
    )


def gather(allocations: Iterable[AllocationResult | None], consumable: bool) -> AllocatedState:
    """``GatherAllocatedState`` over allocation results."""
    exclusive: set[str] = set()
    builder = SharesBuilder()
    for allocation in allocations:
        exclusive.update(exclusive_devices(allocation, consumable))
        for result in shares(allocation, consumable):
            builder.add(result)
    return builder.state(frozenset(exclusive))
