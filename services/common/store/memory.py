"""ClusterStore in plain dicts, for the embedded mode and tests.

Every method runs without awaiting anything, so each call is atomic with respect to
other tasks on the same event loop: two tasks racing to assume onto one node see the
same check-and-reserve guarantee that the Redis backend gets from its Lua scripts.
The semantics are those of :mod:`services.common.store.base`, with the details spelled
out in :mod:`services.common.store.redis` (the contract suite runs against both).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.common.store._charges import fit_reasons, normalize
from services.common.store.base import (
    Assumed,
    AssumeResult,
    BindClaim,
    Nomination,
    ProjectedEntry,
    Reservation,
)


@dataclass(frozen=True, slots=True)
class _Charge:
    node: str
    requests: dict[str, int]


class MemoryStore:
    """An in-process ClusterStore. ``namespace`` only labels it (stores never share state)."""

    def __init__(self, namespace: str = "") -> None:
        self.namespace = namespace
        self._seq = 0
        self._objects: dict[str, dict[str, bytes]] = {}
        self._alloc: dict[str, dict[str, int]] = {}
        self._usage: dict[str, dict[str, int]] = {}
        self._charges: dict[str, _Charge] = {}
        self._assumed: dict[str, Assumed] = {}
        self._leases: dict[str, int] = {}
        self._nominations: dict[str, Nomination] = {}
        self._queue_view: bytes | None = None

    async def applied_seq(self) -> int:
        return self._seq

    async def apply(self, entries: Sequence[ProjectedEntry]) -> None:
        for entry in entries:
            if entry.seq <= self._seq:
                continue
            self._seq = entry.seq
            objects = self._objects.setdefault(entry.kind, {})
            if entry.body is None:
                objects.pop(entry.key, None)
            else:
                objects[entry.key] = entry.body
            if entry.kind == "node":
                if entry.body is None:
                    self._alloc.pop(entry.key, None)
                else:
                    self._alloc[entry.key] = dict(entry.allocatable or {})
            if entry.pod is not None:
                self._apply_pod(entry.pod.uid, entry.pod.node, entry.pod.requests, entry.body)

    def _apply_pod(
        self, uid: str, node: str | None, requests: Mapping[str, int], body: bytes | None
    ) -> None:
        old = self._charges.pop(uid, None)
        if old is not None:
            self._charge(old.node, old.requests, -1)
        if node is not None or body is None:
            # Bound or deleted: any assumption ends here. When it was on ``node`` its
            # capacity is taken over by the bound charge below (released, then re-added).
            self._release(uid)
            self._leases.pop(uid, None)
            self._nominations.pop(uid, None)
        if node is not None and body is not None:
            charge = _Charge(node, normalize(requests))
            self._charges[uid] = charge
            self._charge(node, charge.requests, +1)

    async def objects(self, kind: str) -> dict[str, bytes]:
        return dict(self._objects.get(kind, {}))

    async def node_usage(self, nodes: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
        names = self._alloc.keys() | self._usage.keys() if nodes is None else nodes
        return {name: dict(self._usage.get(name, {})) for name in names}

    async def allocatable(self, nodes: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
        names = self._alloc.keys() if nodes is None else nodes
        return {name: dict(self._alloc[name]) for name in names if name in self._alloc}

    async def assume(self, reservations: Sequence[Reservation], now: float) -> list[AssumeResult]:
        swept: set[str] = set()
        return [self._assume_one(r, now, swept) for r in reservations]

    def _assume_one(self, r: Reservation, now: float, swept: set[str]) -> AssumeResult:
        if self._leases.get(r.uid) != r.attempt:
            return AssumeResult("stale", reason="attempt is not the pod's lease")
        if r.uid in self._charges:
            return AssumeResult("stale", reason="pod is bound")
        current = self._assumed.get(r.uid)
        if current is not None:
            if math.isinf(current.deadline):
                return AssumeResult("stale", reason="pod is binding")
            if (current.node, current.attempt) == (r.node, r.attempt) and current.deadline >= now:
                return AssumeResult("assumed")
            self._release(r.uid)
        if r.node not in swept:  # ``now`` is fixed for the call: one sweep per node is enough
            swept.add(r.node)
            for uid, a in list(self._assumed.items()):
                if a.node == r.node and a.deadline < now:
                    self._release(uid)
        usage = self._usage.get(r.node, {})
        if r.node not in self._alloc:
            return AssumeResult("conflict", dict(usage), "node not found")
        requests = normalize(r.requests)
        reasons = fit_reasons(requests, usage, self._alloc[r.node], r.checked)
        if reasons:
            return AssumeResult("conflict", dict(usage), ", ".join(reasons))
        deadline = min(now + r.ttl, sys.float_info.max)  # inf means binding
        self._assumed[r.uid] = Assumed(r.node, r.attempt, deadline, requests)
        self._charge(r.node, requests, +1)
        return AssumeResult("assumed")

    async def begin_bind(self, claims: Sequence[BindClaim]) -> list[bool]:
        results = []
        for c in claims:
            a = self._assumed.get(c.uid)
            ok = a is not None and (a.node, a.attempt) == (c.node, c.attempt)
            if a is not None and ok:
                self._assumed[c.uid] = Assumed(a.node, a.attempt, math.inf, a.requests)
            results.append(ok)
        return results

    async def forget(self, claims: Sequence[BindClaim]) -> None:
        for c in claims:
            a = self._assumed.get(c.uid)
            if a is not None and (a.node, a.attempt) == (c.node, c.attempt):
                self._release(c.uid)

    async def assumed(self) -> dict[str, Assumed]:
        return dict(self._assumed)

    async def set_leases(self, leases: Mapping[str, int]) -> None:
        self._leases.update(leases)

    async def leases(self) -> dict[str, int]:
        return dict(self._leases)

    async def drop_leases(self, uids: Sequence[str]) -> None:
        for uid in uids:
            self._leases.pop(uid, None)

    async def set_nominations(self, nominations: Mapping[str, Nomination]) -> None:
        self._nominations.update(nominations)

    async def clear_nominations(self, uids: Sequence[str]) -> None:
        for uid in uids:
            self._nominations.pop(uid, None)

    async def nominations(self) -> dict[str, Nomination]:
        return dict(self._nominations)

    async def put_queue_view(self, view: bytes) -> None:
        self._queue_view = view

    async def queue_view(self) -> bytes | None:
        return self._queue_view

    async def close(self) -> None:
        pass

    def _release(self, uid: str) -> None:
        a = self._assumed.pop(uid, None)
        if a is not None:
            self._charge(a.node, a.requests, -1)

    def _charge(self, node: str, requests: Mapping[str, int], sign: int) -> None:
        usage = self._usage.setdefault(node, {})
        for name, amount in requests.items():
            total = usage.get(name, 0) + sign * amount
            if total:
                usage[name] = total
            else:
                usage.pop(name, None)
        if not usage:
            del self._usage[node]
