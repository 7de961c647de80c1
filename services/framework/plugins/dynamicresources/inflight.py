"""Claim allocations this replica has decided and the cluster does not show yet.

Upstream's ``inFlightAllocations`` (with the claim assume cache): Reserve records the
claim as allocated so that the next pod, even in the same batch, finds its devices
taken, and a pod sharing the claim waits ("in the process of being allocated") rather
than allocating it a second time. The entry lives until the listers catch up::

    listed claim, unallocated ──Reserve: signal──▶ in flight (this replica only)
              ▲                                       │
              └──────── dropped when stale ───────────┘

An entry is stale, and dropped at the next PreFilter, when the listed claim shows an
allocation (the binder's ClaimStatusEffect came back through the log), when the
claim went away or was replaced (another uid), or when the pod that made it is no
longer assumed or bound on its node (its reservation expired, or was forgotten).
Unreserve drops it at once. Other replicas learn of these devices through the store,
which holds the pod's reservation with them (``CycleState.reserved_devices``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from contracts.k8s.resource import AllocationResult, ResourceClaim
from services.framework.api.listers import Listers
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.dynamicresources.allocator import device_id
from services.framework.plugins.dynamicresources.claims import claim_uid


@dataclass(frozen=True, slots=True)
class InFlight:
    claim: ResourceClaim
    """The claim as Reserve allocated it (``status.allocation`` set)."""
    pod_uid: str
    node: str


def exclusive_devices(allocation: AllocationResult | None) -> Iterator[str]:
    """The devices an allocation takes for itself (``driver/pool/device``): not those
    with admin access, which only watch a device, nor shared ones (``shareID``), which
    others may share."""
    if allocation is None:
        return
    for result in allocation.devices.results:
        if result.admin_access or result.share_id is not None:
            continue
        yield device_id(result.driver, result.pool, result.device)


class InFlightAllocations:
    def __init__(self, listers: Listers) -> None:
        self._listers = listers
        self._by_uid: dict[str, InFlight] = {}
        """By claim uid."""
        self._listed: dict[str, tuple[ResourceClaim, tuple[str, ...]]] = {}
        """Listed claim key → (the claim object, its devices)."""
        self._taken: frozenset[str] | None = None
        """The last :meth:`allocated_devices`; None when in-flight entries changed."""

    def __len__(self) -> int:
        return len(self._by_uid)

    def has(self, claim_uid: str) -> bool:
        """``ClaimHasPendingAllocation``."""
        return claim_uid in self._by_uid

    def get(self, claim_uid: str) -> InFlight | None:
        return self._by_uid.get(claim_uid)

    def signal(self, claim: ResourceClaim, pod_uid: str, node: str) -> None:
        """``SignalClaimPendingAllocation``: ``claim`` carries its new allocation."""
        self._by_uid[claim_uid(claim)] = InFlight(claim, pod_uid, node)
        self._taken = None

    def remove(self, claim_uid: str, pod_uid: str) -> bool:
        """``RemoveClaimPendingAllocation`` for the pod that signalled it."""
        entry = self._by_uid.get(claim_uid)
        if entry is None or entry.pod_uid != pod_uid:
            return False
        del self._by_uid[claim_uid]
        self._taken = None
        return True

    def refresh(self, nodes: Snapshot) -> None:
        """Drop stale entries (see the module docstring)."""
        for uid, entry in list(self._by_uid.items()):
            meta = entry.claim.metadata
            listed = self._listers.resource_claim(meta.namespace, meta.name)
            if (
                listed is None
                or claim_uid(listed) != uid
                or listed.status.allocation is not None
                or not _still_placed(nodes, entry.pod_uid, entry.node)
            ):
                del self._by_uid[uid]
                self._taken = None

    def allocated_devices(self) -> frozenset[str]:
        """``ListAllAllocatedDevices``: the devices of every allocated claim the
        listers hold and of every allocation in flight. Each listed claim's devices
        are worked out once per claim object (upstream keeps them up to date from
        informer events), and the set is rebuilt only when something changed."""
        listed = self._listers.resource_claims
        changed = self._taken is None
        for key, claim in listed.items():
            seen = self._listed.get(key)
            if seen is None or seen[0] is not claim:
                self._listed[key] = (claim, tuple(exclusive_devices(claim.status.allocation)))
                changed = True
        if len(self._listed) != len(listed):
            for key in [key for key in self._listed if key not in listed]:
                del self._listed[key]
            changed = True
        if changed or self._taken is None:
            taken = {device for _, devices in self._listed.values() for device in devices}
            taken.update(_devices(e.claim.status.allocation for e in self._by_uid.values()))
            self._taken = frozenset(taken)
        return self._taken


def _devices(allocations: Iterable[AllocationResult | None]) -> Iterator[str]:
    for allocation in allocations:
        yield from exclusive_devices(allocation)


def _still_placed(nodes: Snapshot, uid: str, node: str) -> bool:
    row = nodes.index.get(node)
    return row is not None and uid in nodes.pods[row]
