"""DRA devices as the store holds them: a device's id (``driver/pool/device``) and the
devices a ResourceClaim's allocation takes for itself alone.

The same id as the allocator's ``device_id`` (upstream's ``MakeDeviceID``), here because
the informer and the store need it below the framework; tests hold the two together.
"""

from __future__ import annotations

from collections.abc import Iterator

from contracts.k8s.resource import AllocationResult, ResourceClaim


def device_id(driver: str, pool: str, device: str) -> str:
    """``driver/pool/device`` (a driver and a device name have no slash; a pool may)."""
    return f"{driver}/{pool}/{device}"


def exclusive_devices(
    allocation: AllocationResult | None, consumable: bool = True
) -> Iterator[str]:
    """The devices an allocation takes for itself (``driver/pool/device``), in result
    order: every result except those with ``adminAccess: true`` (which allocate nothing)
    and, with DRAConsumableCapacity (``consumable``), those with a ``shareID`` (a share of
    a device that allows multiple allocations), as upstream's ``GatherAllocatedState``
    counts them."""
    if allocation is None:
        return
    for r in allocation.devices.results:
        if r.admin_access or (consumable and r.share_id is not None):
            continue
        yield device_id(r.driver, r.pool, r.device)


def allocated_devices(claim: ResourceClaim) -> tuple[str, ...]:
    """The devices the claim's ``status.allocation`` holds exclusively
    (:func:`exclusive_devices`), once each. The store guards these alone: how much of a
    shared device the shares consume is the allocator's to count. Empty when the claim
    is not allocated."""
    return tuple(dict.fromkeys(exclusive_devices(claim.status.allocation)))
