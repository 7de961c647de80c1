"""The structured-parameters allocator (upstream's
``staging/src/k8s.io/dynamic-resource-allocation/structured``): which devices of which
pools satisfy a set of ResourceClaims on one node, with the CEL environment of device
selectors (:mod:`.cel`)::

    allocator = Allocator(
        features=AllocatorFeatures.from_gates(),
        allocated=AllocatedState(...),         # what allocated claims hold (.allocated)
        classes=listers.device_classes,        # name -> DeviceClass
        slices=list_of_resource_slices,
        cel=CELCache(),                        # compiled selectors, shared, long-lived
    )
    results = allocator.allocate(node, claims)  # one AllocationResult per claim, in order
    # -> None when the claims cannot all be allocated on this node (Unschedulable)
    # -> raises AllocationError(message) for an error upstream returns as an error
    #    (a missing DeviceClass, a CEL compile or runtime error, ...), with upstream's text

Not here: which claims a pod has, in-flight allocations and the extension points (the
DynamicResources plugin, one package up); API validation of the objects (the informer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

DEVICE_ID_SEPARATOR: Final = "/"


def device_id(driver: str, pool: str, device: str) -> str:
    """``driver/pool/device``: a driver has no slash and a device name none either, so
    the pool (which may hold slashes) is what lies between the first and the last."""
    return f"{driver}/{pool}/{device}"


def split_device_id(value: str) -> tuple[str, str, str]:
    driver, _, rest = value.partition("/")
    pool, _, device = rest.rpartition("/")
    return driver, pool, device


class AllocationError(Exception):
    """An error (not a plain "does not fit"): the message is upstream's."""


class AllocationFailedOnNode(AllocationError):
    """Upstream's ``ErrFailedAllocationOnNode`` (today: invalid resource pools were
    encountered and nothing else fit): not an error of the pod but a reason this node
    is unschedulable; the plugin reports it as Unschedulable with this text and goes
    on with other nodes."""


@dataclass(frozen=True, slots=True)
class AllocatorFeatures:
    """The allocator's switches, from the feature gates (upstream's ``Features``)."""

    admin_access: bool = True
    prioritized_list: bool = True
    device_taints: bool = True
    partitionable_devices: bool = True
    consumable_capacity: bool = True
    device_binding: bool = True
    device_status: bool = True
    fractional_capacity_range: bool = True
    """DRAFractionalCapacityRange: a capacity range may step in thousandths."""

    @classmethod
    def from_gates(cls) -> AllocatorFeatures:
        """The switches as the process's feature gates set them."""
        from services.common import features

        return cls(
            admin_access=features.enabled("DRAAdminAccess"),
            prioritized_list=features.enabled("DRAPrioritizedList"),
            device_taints=features.enabled("DRADeviceTaints"),
            partitionable_devices=features.enabled("DRAPartitionableDevices"),
            consumable_capacity=features.enabled("DRAConsumableCapacity"),
            device_binding=features.enabled("DRADeviceBindingConditions"),
            device_status=features.enabled("DRAResourceClaimDeviceStatus"),
            fractional_capacity_range=features.enabled("DRAFractionalCapacityRange"),
        )


# The implementation, below the names it uses (its modules import them from here).
from services.framework.plugins.dynamicresources.allocator.cel import CELCache  # noqa: E402
from services.framework.plugins.dynamicresources.allocator.search import Allocator  # noqa: E402

__all__ = [
    "DEVICE_ID_SEPARATOR",
    "AllocationError",
    "AllocationFailedOnNode",
    "Allocator",
    "AllocatorFeatures",
    "CELCache",
    "device_id",
    "split_device_id",
]
