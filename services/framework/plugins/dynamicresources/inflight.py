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
claim went away or was replaced (another uid; a pod's extended-resource claim, which
PreBind creates, counts as not listed yet), or when the pod that made it is no longer
assumed or bound on its node (its reservation expired, or was forgotten).
Unreserve drops it at once. Other replicas learn of these devices through the store,
which holds the pod's reservation with them (``CycleState.reserved_devices``).

Shares of devices that allow multiple allocations (DRAConsumableCapacity: results with a
``shareID``) are not taken devices: they are kept apart, per listed claim and per entry,
and summed into the consumed capacity of :meth:`InFlightAllocations.allocated_state`.
The store holds exclusive devices only, so another replica learns of a share once the
claim is listed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from contracts.k8s.resource import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    DeviceRequestAllocationResult,
    ResourceClaim,
)
from services.common import features
from services.common.k8s.devices import exclusive_devices
from services.framework.api.listers import Listers
from services.framework.api.types import Int64Array
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.dynamicresources.allocator import device_id
from services.framework.plugins.dynamicresources.allocator.allocated import (
    EMPTY_CAPACITY,
    AllocatedState,
    SharesBuilder,
    shares,
)
from services.framework.plugins.dynamicresources.claims import claim_uid


@dataclass(frozen=True, slots=True)
class InFlight:
    claim: ResourceClaim
    """The claim as Reserve allocated it (``status.allocation`` set)."""
    pod_uid: str
    node: str


def _share_devices(found: tuple[DeviceRequestAllocationResult, ...]) -> set[str]:
    return {device_id(r.driver, r.pool, r.device) for r in found}


class InFlightAllocations:
    def __init__(self, listers: Listers) -> None:
        self._listers = listers
        self._by_uid: dict[str, InFlight] = {}
        """By claim uid."""
        self._by_key: dict[str, str] = {}
        """Claim key (``namespace/name``) → uid of its entry."""
        self._by_node: dict[str, set[str]] = {}
        """Node → uids of the entries of pods placed there."""
        self._flight_count: Counter[str] = Counter()
        """Device → how many entries hold it."""
        self._listed: dict[str, tuple[str, ...]] = {}
        """Listed claim key → its devices."""
        self._listed_count: Counter[str] = Counter()
        """Device → how many listed claims hold it."""
        self._epoch = -1
        self._seen = 0
        """How far :attr:`Listers.resource_claim_changes` was followed."""
        self._versions: Int64Array | None = None
        self._index: object = None
        """The node rows' pod versions (and the row index) at the last refresh."""
        self._pending_keys: set[str] = set()
        """Claims changed in the listers since the last refresh."""
        self._taken: frozenset[str] | None = None
        """The last :meth:`allocated_devices`; None when something changed."""
        self._changed: set[str] = set()
        """Devices taken or freed since the last :meth:`drain_changes`."""
        self._consumable = features.enabled("DRAConsumableCapacity")
        self._listed_shares: dict[str, tuple[DeviceRequestAllocationResult, ...]] = {}
        """Listed claim key → its shares."""
        self._flight_shares: dict[str, tuple[DeviceRequestAllocationResult, ...]] = {}
        """Entry (claim uid) → its shares."""
        self._shares_state: AllocatedState | None = None
        """The shares summed (``devices`` unset); None when they changed."""

    def __len__(self) -> int:
        return len(self._by_uid)

    def has(self, claim_uid: str) -> bool:
        """``ClaimHasPendingAllocation``."""
        return claim_uid in self._by_uid

    def get(self, claim_uid: str) -> InFlight | None:
        return self._by_uid.get(claim_uid)

    def signal(self, claim: ResourceClaim, pod_uid: str, node: str) -> None:
        """``SignalClaimPendingAllocation``: ``claim`` carries its new allocation."""
        uid = claim_uid(claim)
        self._drop(uid)
        entry = InFlight(claim, pod_uid, node)
        self._by_uid[uid] = entry
        self._by_key[_claim_key(claim)] = uid
        self._by_node.setdefault(node, set()).add(uid)
        devices = list(exclusive_devices(claim.status.allocation, self._consumable))
        self._flight_count.update(devices)
        self._changed.update(devices)
        self._taken = None
        found = shares(claim.status.allocation, self._consumable)
        if found:
            self._flight_shares[uid] = found
            self._changed.update(_share_devices(found))
            self._shares_state = None

    def remove(self, claim_uid: str, pod_uid: str) -> bool:
        """``RemoveClaimPendingAllocation`` for the pod that signalled it."""
        entry = self._by_uid.get(claim_uid)
        if entry is None or entry.pod_uid != pod_uid:
            return False
        self._drop(claim_uid)
        return True

    def _drop(self, uid: str) -> None:
        entry = self._by_uid.pop(uid, None)
        if entry is None:
            return
        key = _claim_key(entry.claim)
        if self._by_key.get(key) == uid:
            del self._by_key[key]
        on_node = self._by_node.get(entry.node)
        if on_node is not None:
            on_node.discard(uid)
            if not on_node:
                del self._by_node[entry.node]
        count = self._flight_count
        for device in exclusive_devices(entry.claim.status.allocation, self._consumable):
            count[device] -= 1
            if count[device] <= 0:
                del count[device]
            self._changed.add(device)
        self._taken = None
        found = self._flight_shares.pop(uid, ())
        if found:
            self._changed.update(_share_devices(found))
            self._shares_state = None

    def refresh(self, nodes: Snapshot) -> None:
        """Drop stale entries (see the module docstring). Only the entries whose claim
        changed in the listers, or whose node's pods changed, since the last refresh
        are looked at (every entry after a new snapshot layout)."""
        self._follow_changes()
        if not self._by_uid:
            self._pending_keys.clear()
            self._remember(nodes)
            return
        if (
            self._versions is None
            or self._index is not nodes.index
            or len(self._versions) != len(nodes.pod_versions)
        ):
            candidates = set(self._by_uid)
        else:
            moved = np.flatnonzero(self._versions != nodes.pod_versions)
            candidates = set()
            for row in moved.tolist():
                candidates |= self._by_node.get(nodes.names[row], set())
            for key in self._pending_keys:
                uid = self._by_key.get(key)
                if uid is not None:
                    candidates.add(uid)
        self._pending_keys.clear()
        self._remember(nodes)
        for uid in candidates:
            entry = self._by_uid.get(uid)
            if entry is None:
                continue
            meta = entry.claim.metadata
            listed = self._listers.resource_claim(meta.namespace, meta.name)
            if listed is None:
                # An extended-resource claim is listed only once PreBind created it.
                stale = meta.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true"
            else:
                stale = claim_uid(listed) != uid or listed.status.allocation is not None
            if stale or not _still_placed(nodes, entry.pod_uid, entry.node):
                self._drop(uid)

    def _remember(self, nodes: Snapshot) -> None:
        self._versions = nodes.pod_versions.copy()
        self._index = nodes.index

    def allocated_devices(self) -> frozenset[str]:
        """``ListAllAllocatedDevices``: the devices of every allocated claim the
        listers hold and of every allocation in flight. Both are kept up to date as
        they change (the listed claims from the listers' journal of claim changes, as
        upstream keeps them from informer events); the set is rebuilt only when
        something changed."""
        self._follow_changes()
        if self._taken is None:
            taken = set(self._listed_count)
            taken.update(self._flight_count)
            self._taken = frozenset(taken)
        return self._taken

    def allocated_state(self, elsewhere: frozenset[str]) -> AllocatedState:
        """The allocator's input: :meth:`taken` as the devices taken exclusively, with the
        shares of listed claims and of allocations in flight (none: no share at all)."""
        taken = self.taken(elsewhere)
        if not self._listed_shares and not self._flight_shares:
            return AllocatedState(devices=taken, capacity=EMPTY_CAPACITY)
        if self._shares_state is None:
            builder = SharesBuilder()
            for group in (self._listed_shares, self._flight_shares):
                for found in group.values():
                    for result in found:
                        builder.add(result)
            self._shares_state = builder.state(frozenset())
        summed = self._shares_state
        return AllocatedState(
            devices=taken,
            shares=summed.shares,
            shared_devices=summed.shared_devices,
            capacity=summed.capacity,
        )

    def _follow_changes(self) -> None:
        listers = self._listers
        changes = listers.resource_claim_changes
        consumable = features.enabled("DRAConsumableCapacity")
        if consumable != self._consumable:
            self._consumable = consumable
            self._epoch = -1  # what a share is changed: relist
        if listers.resource_claims_epoch != self._epoch:
            self._epoch = listers.resource_claims_epoch
            self._changed.update(self._listed_count)
            for found in self._listed_shares.values():
                self._changed.update(_share_devices(found))
            self._listed_shares = {}
            self._shares_state = None
            self._listed, self._listed_count = {}, Counter()
            for key in listers.resource_claims:
                self._relist(key)
            self._seen = len(changes)
            self._pending_keys.update(self._by_key)
            self._taken = None
        elif self._seen < len(changes):
            for key in changes[self._seen :]:
                self._relist(key)
                self._pending_keys.add(key)
            self._seen = len(changes)
            self._taken = None

    def _relist(self, key: str) -> None:
        count = self._listed_count
        old = self._listed.pop(key, ())
        for device in old:
            count[device] -= 1
            if count[device] <= 0:
                del count[device]
        claim = self._listers.resource_claims.get(key)
        allocation = claim.status.allocation if claim is not None else None
        devices = tuple(exclusive_devices(allocation, self._consumable))
        if devices:
            self._listed[key] = devices
            count.update(devices)
        if old != devices:
            self._changed.update(old)
            self._changed.update(devices)
        old_shares = self._listed_shares.pop(key, ())
        found = shares(allocation, self._consumable)
        if found:
            self._listed_shares[key] = found
        if old_shares != found:
            self._changed.update(_share_devices(old_shares) | _share_devices(found))
            self._shares_state = None

    def taken(self, elsewhere: frozenset[str]) -> TakenDevices:
        """The devices taken now (listed claims, allocations in flight, ``elsewhere``),
        as a live view: what :meth:`allocated_devices` holds, without building a set."""
        self._follow_changes()
        return TakenDevices(self._listed_count, self._flight_count, elsewhere)

    def drain_changes(self) -> set[str]:
        """The devices taken or freed since the last call (after following the
        listers); a new epoch counts as a change of every device."""
        self._follow_changes()
        changed, self._changed = self._changed, set()
        return changed


class TakenDevices:
    """Membership in the devices taken (the allocator asks only ``device in taken``)."""

    __slots__ = ("_elsewhere", "_flight", "_listed")

    def __init__(self, listed: Counter[str], flight: Counter[str], elsewhere: frozenset[str]):
        self._listed, self._flight, self._elsewhere = listed, flight, elsewhere

    def __contains__(self, device: object) -> bool:
        return device in self._listed or device in self._flight or device in self._elsewhere


def _claim_key(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace or 'default'}/{claim.metadata.name}"


def _still_placed(nodes: Snapshot, uid: str, node: str) -> bool:
    row = nodes.index.get(node)
    return row is not None and uid in nodes.pods[row]
