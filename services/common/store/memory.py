"""ClusterStore in plain dicts, for the embedded mode and tests.

Every method runs without awaiting anything, so each call is atomic with respect to
other tasks on the same event loop: two tasks racing to assume onto one node see the
same check-and-reserve guarantee that the Redis backend gets from its Lua scripts.
The semantics are those of :mod:`services.common.store.base`, with the details spelled
out in :mod:`services.common.store.redis` (the contract suite runs against both).
"""

from __future__ import annotations

import copy
import math
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from services.common.store._charges import devices_taken, fit_reasons, normalize
from services.common.store._waiting import WAITING_REMOVED, first_due, resolve
from services.common.store.base import (
    VOIDED,
    Assumed,
    AssumeResult,
    BindClaim,
    Epoch,
    Nomination,
    NominationClaim,
    Preemption,
    ProjectedEntry,
    Reservation,
    StoreLost,
    WaitingRecord,
    live,
)
from services.common.store.leases import Fence, LeaderLease
from services.common.store.memory_leases import LeaderLeases

_BUILDING = "building"


@dataclass(frozen=True, slots=True)
class _Charge:
    node: str
    requests: dict[str, int]


class _Data:
    """What a Redis server would hold: shared by every client of one MemoryStore."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.identity = uuid.uuid4().hex
        """A new server's (a flush is a restart without persistence)."""
        self.marker: str | None = None
        """None: Blank; "building"; or "live:{token}"."""
        self.seq = 0
        self.objects: dict[str, dict[str, bytes]] = {}
        self.alloc: dict[str, dict[str, int]] = {}
        self.usage: dict[str, dict[str, int]] = {}
        self.charges: dict[str, _Charge] = {}
        self.assumed: dict[str, Assumed] = {}
        self.domains: dict[str, int] = {}
        """Placement versions (Reservation.reads and touches)."""
        self.anti_keys: set[str] = set()
        """Topology keys of the placed pods' required anti-affinity (Reservation.keys)."""
        self.holders: dict[str, str] = {}
        """DRA device → ``pod:<uid>`` or ``claim:<key>`` (see store.base)."""
        self.pod_devices: dict[str, tuple[str, ...]] = {}
        """Pod uid → the devices its reservation asked for (held while ``holders`` says so)."""
        self.claim_devices: dict[str, tuple[str, ...]] = {}
        """Claim key → the devices its allocation holds."""
        self.leases: dict[str, int] = {}
        self.nominations: dict[str, Nomination] = {}
        self.queue_view: bytes | None = None
        self.waiting: dict[str, WaitingRecord] = {}
        self.releases = 0
        """The release version (ClusterStore.release_waiting)."""
        self.evicting: dict[str, str] = {}
        self.preemptions: dict[str, Preemption] = {}
        self.leaders: dict[str, LeaderLease] = {}

    def waiting_gone(self, uid: str) -> None:
        """The pod was deleted: a wait of it ends rejected (``RejectWaitingPod`` on
        delete), resolved at 0 so the next binder sweep hands it on."""
        record = self.waiting.get(uid)
        if record is not None and record.state == "waiting":
            self.waiting[uid] = resolve(record, "rejected", "", WAITING_REMOVED, 0.0)


class MemoryStore(LeaderLeases):
    """An in-process ClusterStore. ``namespace`` only labels it (stores never share
    state); :meth:`client` opens another client on the same data, as a second
    RedisStore on the same Redis namespace would be."""

    def __init__(self, namespace: str = "", *, _data: _Data | None = None) -> None:
        self.namespace = namespace
        self._d = _data or _Data()
        self._expected = ""
        """The live token this client expects ("" until it attaches)."""
        self._fence: Fence | None = None

    @property
    def _leaders(self) -> dict[str, LeaderLease]:
        return self._d.leaders

    def client(self) -> MemoryStore:
        """Another client on the same data, with its own expected marker."""
        return MemoryStore(self.namespace, _data=self._d)

    def replicate(self) -> object:
        """A copy of the data as an asynchronous replica holds it now (a test hook:
        :meth:`promote` it later to lose what was written since)."""
        return copy.deepcopy(self._d)

    def promote(self, replica: object, *, new_identity: bool = True) -> None:
        """Fail over to ``replica`` (from :meth:`replicate`), as Sentinel promoting a
        lagging replica: every client sees its data, under a new identity (or the old
        one: a loss the identity does not tell)."""
        assert isinstance(replica, _Data)
        identity = self._d.identity
        self._d.__dict__.update(copy.deepcopy(replica).__dict__)
        self._d.identity = uuid.uuid4().hex if new_identity else identity

    def flush(self) -> None:
        """Lose everything, as a Redis FLUSHDB would (a test hook: the clients' expected
        markers stay, so their next guarded call raises StoreLost)."""
        self._d.reset()

    async def epoch(self) -> Epoch:
        if self._d.marker is None:
            return Epoch("blank", seq=self._d.seq)
        if self._d.marker == _BUILDING:
            return Epoch("building", seq=self._d.seq)
        return Epoch("live", self._d.marker.removeprefix("live:"), self._d.seq)

    async def attach(self) -> Epoch:
        current = live(await self.epoch(), self.namespace)
        self._expected = current.token
        return current

    async def identity(self) -> str:
        return self._d.identity

    async def invalidate(self, token: str) -> bool:
        self._fenced()
        if self._d.marker != f"live:{token}":
            return False
        self._d.marker = _BUILDING
        return True

    async def restore(
        self, entries: Sequence[ProjectedEntry], *, final: bool, base: int | None = None
    ) -> None:
        self._fenced()
        if self._d.marker not in (None, _BUILDING):
            raise StoreLost(f"store {self.namespace!r} is live: nothing to restore")
        if base is not None:
            if self._d.marker is not None or self._d.seq:
                raise StoreLost(f"store {self.namespace!r} is not blank: no snapshot on it")
            self._d.seq = base
        try:
            self._check_continues(entries)
        except StoreLost:
            if base is not None:
                self._d.seq = 0
            raise
        self._d.marker = _BUILDING
        self._apply(entries)
        if final:
            self._expected = uuid.uuid4().hex[:16]
            self._d.marker = f"live:{self._expected}"

    async def applied_seq(self) -> int:
        return self._d.seq

    async def apply(self, entries: Sequence[ProjectedEntry]) -> None:
        self._guard()
        self._check_continues(entries)
        if self._d.marker is None and any(e.seq > self._d.seq for e in entries):
            self._expected = uuid.uuid4().hex[:16]  # a fresh cluster's first entries
            self._d.marker = f"live:{self._expected}"
        self._apply(entries)

    def _guard(self) -> None:
        """FencedError or StoreLost unless this client may use the projection (see
        store.base)."""
        self._fenced()
        if self._expected:
            if self._d.marker != f"live:{self._expected}":
                found = "blank" if self._d.marker is None else self._d.marker.partition(":")[0]
                raise StoreLost(
                    f"store {self.namespace!r} lost its projection: expected epoch "
                    f"{self._expected}, found {found}"
                )
        elif self._d.marker == _BUILDING:
            raise StoreLost(f"store {self.namespace!r} is being rebuilt from the event log")

    def _check_continues(self, entries: Sequence[ProjectedEntry]) -> None:
        first = next((e.seq for e in entries if e.seq > self._d.seq), None)
        if first is not None and first != self._d.seq + 1:
            raise StoreLost(
                f"store {self.namespace!r} is at seq {self._d.seq}: applying seq {first} "
                "would leave a gap (the store lost entries)"
            )

    def _apply(self, entries: Sequence[ProjectedEntry]) -> None:
        for entry in entries:
            if entry.seq <= self._d.seq:
                continue
            self._d.seq = entry.seq
            objects = self._d.objects.setdefault(entry.kind, {})
            if entry.body is None:
                objects.pop(entry.key, None)
            else:
                objects[entry.key] = entry.body
            if entry.kind == "node":
                if entry.body is None:
                    self._d.alloc.pop(entry.key, None)
                else:
                    self._d.alloc[entry.key] = dict(entry.allocatable or {})
            if entry.pod is not None:
                self._apply_pod(entry.pod.uid, entry.pod.node, entry.pod.requests, entry.body)
            if entry.kind == "resourceclaim":
                devices = () if entry.body is None else entry.devices or ()
                self._apply_claim(entry.key, devices)

    def _apply_claim(self, key: str, devices: tuple[str, ...]) -> None:
        holder, holders = f"claim:{key}", self._d.holders
        for device in self._d.claim_devices.pop(key, ()):
            if holders.get(device) == holder:
                del holders[device]
        for device in devices:
            holders[device] = holder  # a pod's hold ends here: the claim has them now
        if devices:
            self._d.claim_devices[key] = devices

    def _apply_pod(
        self, uid: str, node: str | None, requests: Mapping[str, int], body: bytes | None
    ) -> None:
        old = self._d.charges.pop(uid, None)
        if old is not None:
            self._charge(old.node, old.requests, -1)
        if node is not None or body is None:
            # Bound or deleted: any assumption ends here. When it was on ``node`` its
            # capacity is taken over by the bound charge below (released, then re-added).
            self._release(uid, devices=body is None)  # bound: held until its claims are
            self._d.leases.pop(uid, None)
            self._d.nominations.pop(uid, None)
            if body is None:
                self._d.waiting_gone(uid)
                self._d.evicting.pop(uid, None)
        if node is not None and body is not None:
            charge = _Charge(node, normalize(requests))
            self._d.charges[uid] = charge
            self._charge(node, charge.requests, +1)

    async def objects(self, kind: str) -> dict[str, bytes]:
        self._guard()
        return dict(self._d.objects.get(kind, {}))

    async def objects_at(self, kinds: Sequence[str]) -> tuple[int, dict[str, dict[str, bytes]]]:
        self._guard()
        return self._d.seq, {kind: dict(self._d.objects.get(kind, {})) for kind in kinds}

    async def node_usage(self, nodes: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
        self._guard()
        names = self._d.alloc.keys() | self._d.usage.keys() if nodes is None else nodes
        return {name: dict(self._d.usage.get(name, {})) for name in names}

    async def allocatable(self, nodes: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
        self._guard()
        names = self._d.alloc.keys() if nodes is None else nodes
        return {name: dict(self._d.alloc[name]) for name in names if name in self._d.alloc}

    async def assume(self, reservations: Sequence[Reservation], now: float) -> list[AssumeResult]:
        self._guard()
        swept: set[str] = set()
        results: list[AssumeResult] = []
        gone: set[str] = set()
        """Domains touched by the refused reservations of this call."""
        for r in reservations:
            if gone.intersection(r.reads):  # decided with a refused pod in its snapshot
                domains = self._d.domains
                usage = dict(self._d.usage.get(r.node, {}))
                versions = {d: domains.get(d, 0) for d in r.reads}
                results.append(AssumeResult("conflict", usage, VOIDED, versions))
            else:
                results.append(self._assume_one(r, now, swept))
            if results[-1].status != "assumed":
                gone.update(r.touches)
        return results

    def _assume_one(self, r: Reservation, now: float, swept: set[str]) -> AssumeResult:
        if self._d.leases.get(r.uid) != r.attempt:
            return AssumeResult("stale", reason="attempt is not the pod's lease")
        if r.uid in self._d.charges:
            return AssumeResult("stale", reason="pod is bound")
        current = self._d.assumed.get(r.uid)
        if current is not None:
            if math.isinf(current.deadline):
                return AssumeResult("stale", reason="pod is binding")
            if (current.node, current.attempt) == (r.node, r.attempt) and current.deadline >= now:
                self._touch(r.touches)
                self._d.anti_keys.update(r.keys)
                return AssumeResult("assumed")
            self._release(r.uid)
        if r.node not in swept:  # ``now`` is fixed for the call: one sweep per node is enough
            swept.add(r.node)
            for uid, a in list(self._d.assumed.items()):
                if a.node == r.node and a.deadline < now:
                    self._release(uid)
        usage = self._d.usage.get(r.node, {})
        if r.node not in self._d.alloc:
            return AssumeResult("conflict", dict(usage), "node not found")
        requests = normalize(r.requests)
        reasons = fit_reasons(requests, usage, self._d.alloc[r.node], r.checked)
        if reasons:
            return AssumeResult("conflict", dict(usage), ", ".join(reasons))
        domains = self._d.domains
        moved = [d for d, v in r.reads.items() if domains.get(d, 0) != v]
        if moved:
            versions = {d: domains.get(d, 0) for d in r.reads}
            reason = f"placements changed in {', '.join(sorted(moved))}"
            return AssumeResult("conflict", dict(usage), reason, versions)
        missing = tuple(sorted(self._d.anti_keys - r.watched)) if r.watched is not None else ()
        if missing:
            versions = {d: domains.get(d, 0) for d in r.reads}
            reason = f"pods with required anti-affinity on {', '.join(missing)} placed"
            return AssumeResult("conflict", dict(usage), reason, versions, missing)
        devices = tuple(dict.fromkeys(r.devices))
        mine = f"pod:{r.uid}"
        held = tuple(d for d in devices if self._holder(d, now) not in (None, mine))
        if held:
            return AssumeResult("conflict", dict(usage), devices_taken(held), devices=held)
        self._touch(r.touches)
        self._d.anti_keys.update(r.keys)
        deadline = min(now + r.ttl, sys.float_info.max)  # inf means binding
        self._d.assumed[r.uid] = Assumed(r.node, r.attempt, deadline, requests)
        self._charge(r.node, requests, +1)
        if devices:
            self._d.pod_devices[r.uid] = devices
            self._d.holders.update(dict.fromkeys(devices, mine))
        return AssumeResult("assumed")

    def _holder(self, device: str, now: float) -> str | None:
        """Who holds ``device`` at ``now``: a pod whose assumption expired (on another
        node than the one being swept) holds nothing any more and is released."""
        holder = self._d.holders.get(device)
        if holder is not None and holder.startswith("pod:"):
            uid = holder.removeprefix("pod:")
            a = self._d.assumed.get(uid)
            if a is not None and a.deadline < now:
                self._release(uid)
                return None
        return holder

    def _touch(self, domains: Sequence[str]) -> None:
        versions = self._d.domains
        for d in domains:
            versions[d] = versions.get(d, 0) + 1

    async def domain_versions(self) -> dict[str, int]:
        self._guard()
        return dict(self._d.domains)

    async def devices(self) -> dict[str, str]:
        self._guard()
        return dict(self._d.holders)

    async def begin_bind(self, claims: Sequence[BindClaim], now: float) -> list[bool]:
        self._guard()
        results = []
        for c in claims:
            a = self._d.assumed.get(c.uid)
            ok = a is not None and (a.node, a.attempt) == (c.node, c.attempt)
            if a is not None and ok and a.deadline < now:
                self._release(c.uid)
                ok = False
            if a is not None and ok:
                self._d.assumed[c.uid] = Assumed(a.node, a.attempt, math.inf, a.requests)
            results.append(ok)
        return results

    async def forget(self, claims: Sequence[BindClaim]) -> None:
        self._guard()
        for c in claims:
            a = self._d.assumed.get(c.uid)
            if a is not None and (a.node, a.attempt) == (c.node, c.attempt):
                self._release(c.uid)

    async def assumed(self) -> dict[str, Assumed]:
        self._guard()
        return dict(self._d.assumed)

    async def set_leases(self, leases: Mapping[str, int]) -> None:
        self._guard()
        self._d.leases.update(leases)

    async def leases(self) -> dict[str, int]:
        self._guard()
        return dict(self._d.leases)

    async def drop_leases(self, uids: Sequence[str]) -> None:
        self._guard()
        for uid in uids:
            self._d.leases.pop(uid, None)

    async def set_nominations(self, nominations: Mapping[str, Nomination]) -> None:
        self._guard()
        self._d.nominations.update(nominations)

    async def clear_nominations(self, uids: Sequence[str]) -> None:
        self._guard()
        for uid in uids:
            self._d.nominations.pop(uid, None)

    async def claim_nominations(self, claims: Sequence[NominationClaim]) -> list[str]:
        self._guard()
        held = self._d.nominations
        lost: list[str] = []
        for claim in claims:
            if any(
                n.node == claim.node and n.priority >= claim.priority and uid not in claim.seen
                for uid, n in held.items()
                if uid != claim.uid
            ):
                lost.append(claim.uid)
                continue
            held[claim.uid] = Nomination(claim.node, claim.priority)
            for uid in claim.clears:
                held.pop(uid, None)
        return lost

    async def evictions(self) -> dict[str, str]:
        self._guard()
        return dict(self._d.evicting)

    async def record_evictions(self, evictions: Mapping[str, str]) -> None:
        self._guard()
        self._d.evicting.update(evictions)

    async def drop_evictions(self, uids: Sequence[str]) -> None:
        self._guard()
        for uid in uids:
            self._d.evicting.pop(uid, None)

    async def preemptions(self) -> dict[str, Preemption]:
        self._guard()
        return dict(self._d.preemptions)

    async def set_preemptions(self, preemptions: Mapping[str, Preemption]) -> None:
        self._guard()
        self._d.preemptions.update(preemptions)

    async def drop_preemptions(self, uids: Sequence[str]) -> None:
        self._guard()
        for uid in uids:
            self._d.preemptions.pop(uid, None)

    async def nominations(self) -> dict[str, Nomination]:
        self._guard()
        return dict(self._d.nominations)

    async def put_waiting(self, records: Sequence[WaitingRecord]) -> None:
        for record in records:
            old = self._d.waiting.get(record.uid)
            if old is None or old.attempt <= record.attempt:
                self._d.waiting[record.uid] = replace(record, state="waiting", resolved_at=0.0)

    async def waiting(self) -> dict[str, WaitingRecord]:
        return dict(self._d.waiting)

    async def allow_waiting(self, uid: str, plugin: str, now: float) -> WaitingRecord | None:
        record = self._d.waiting.get(uid)
        if record is None or record.state != "waiting":
            return None
        if plugin in record.pending:
            pending = {p: d for p, d in record.pending.items() if p != plugin}
            record = replace(record, pending=pending)
            if not pending:
                record = resolve(record, "allowed", "", "", now)
            self._d.waiting[uid] = record
        return record

    async def reject_waiting(
        self, uid: str, plugin: str, message: str, now: float
    ) -> WaitingRecord | None:
        record = self._d.waiting.get(uid)
        if record is None or record.state != "waiting":
            return None
        record = resolve(record, "rejected", plugin, message, now)
        self._d.waiting[uid] = record
        return record

    async def release_version(self) -> int:
        self._guard()
        return self._d.releases

    async def release_waiting(
        self, rejections: Sequence[tuple[str, str, str]], seen: int, now: float
    ) -> list[WaitingRecord] | None:
        self._guard()
        if self._d.releases != seen:
            return None
        rejected = []
        for uid, plugin, message in rejections:
            record = self._d.waiting.get(uid)
            if record is None or record.state != "waiting" or record.point != "Permit":
                continue
            record = self._d.waiting[uid] = resolve(record, "rejected", plugin, message, now)
            rejected.append(record)
            a = self._d.assumed.get(uid)
            if a is not None and (a.node, a.attempt) == (record.node, record.attempt):
                self._release(uid)
        self._d.releases += 1 if rejected else 0
        return rejected

    async def expire_waiting(self, now: float) -> list[WaitingRecord]:
        expired = []
        for uid, record in list(self._d.waiting.items()):
            due = first_due(record, now)
            if due is not None:
                record = resolve(record, "rejected", due, "", now)
                self._d.waiting[uid] = record
                expired.append(record)
        return expired

    async def next_waiting_deadline(self) -> float | None:
        deadlines = [
            min(r.pending.values())
            for r in self._d.waiting.values()
            if r.state == "waiting" and r.pending
        ]
        return min(deadlines, default=None)

    async def take_waiting(self, uid: str, attempt: int) -> WaitingRecord | None:
        record = self._d.waiting.get(uid)
        if record is None or record.attempt != attempt:
            return None
        if record.state != "waiting":
            del self._d.waiting[uid]
        return record

    async def return_waiting(self, records: Sequence[WaitingRecord]) -> None:
        for record in records:
            old = self._d.waiting.get(record.uid)
            if record.state != "waiting" and (old is None or old.attempt < record.attempt):
                self._d.waiting[record.uid] = record

    async def resolved_before(self, when: float) -> list[WaitingRecord]:
        return [
            r for r in self._d.waiting.values() if r.state != "waiting" and r.resolved_at <= when
        ]

    async def put_queue_view(self, view: bytes) -> None:
        self._fenced()
        self._d.queue_view = view

    async def queue_view(self) -> bytes | None:
        return self._d.queue_view

    async def close(self) -> None:
        pass

    def _release(self, uid: str, *, devices: bool = True) -> None:
        """Release the pod's assumption and (``devices``) the devices it holds."""
        a = self._d.assumed.pop(uid, None)
        if a is not None:
            self._charge(a.node, a.requests, -1)
        if devices:
            mine, holders = f"pod:{uid}", self._d.holders
            for device in self._d.pod_devices.pop(uid, ()):
                if holders.get(device) == mine:
                    del holders[device]

    def _charge(self, node: str, requests: Mapping[str, int], sign: int) -> None:
        usage = self._d.usage.setdefault(node, {})
        for name, amount in requests.items():
            total = usage.get(name, 0) + sign * amount
            if total:
                usage[name] = total
            else:
                usage.pop(name, None)
        if not usage:
            del self._d.usage[node]
