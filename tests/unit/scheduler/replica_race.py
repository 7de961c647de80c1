"""Scheduler replicas in one process, racing on one store under a random interleaving.

A :class:`Race` holds one event log and a MemoryStore that projects it; each replica
is a BatchScheduler over its own Cache, fed the log when it asks to catch up (as the
service's projection does before a batch and after a domain conflict). The race plays
the other services: the queue (a lease per attempt, the pending pods split at random
into batches for the replicas), the binder (claims reservations at the replicas' fake
time and has Bindings recorded at random moments) and the informer (the log, the
store's projection).
Every store call of a replica or the binder first yields to the loop 0-3 times, so
decisions, commits and bindings interleave differently for each ``random.Random``; now
and then time jumps (one fake clock for all), past some reservations' deadlines.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from contracts.events import PodEntry
from contracts.k8s import Node, Pod
from services.common.clock import FakeClock
from services.common.resources import node_allocatable, pod_requests
from services.common.store import PODS, BindClaim, MemoryStore, PodCharge, ProjectedEntry
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.framework.verify import Violation, store_violations
from services.informer.validate import object_key
from services.scheduler.cycle import BatchScheduler
from tests.builders.scheduling import batch_scheduler, loaded_cache, schedule_request


class Interleaved:
    """The store, each call of which first yields to the loop 0-3 times (``rng``)."""

    def __init__(self, store: MemoryStore, rng: random.Random) -> None:
        self._store, self._rng = store, rng

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            for _ in range(self._rng.randrange(4)):
                await asyncio.sleep(0)
            return await method(*args, **kwargs)

        return call


class Race:
    def __init__(
        self,
        nodes: Sequence[Node],
        pods: Sequence[Pod],
        objects: Mapping[str, Sequence[Any]],
        rng: random.Random,
        *,
        jumps: Sequence[float] = (5.0, 20.0),
    ) -> None:
        """``jumps``: how far the clock may jump between two batches of a replica
        (reservations live 30 s)."""
        self.rng = rng
        self._jumps = jumps
        self.clock = FakeClock()
        """Every replica's and the binder's."""
        self.store = MemoryStore()
        self.shared = Interleaved(self.store, rng)
        self._nodes, self._objects = nodes, objects
        self.pods = {p.metadata.uid or "": p for p in pods}
        self.pending = set(self.pods)
        self._attempts = dict.fromkeys(self.pods, 0)
        self._log: list[PodEntry | None] = []
        """Entry seq - 1 (None: a node or another object, loaded with each snapshot)."""
        self.replicas: list[BatchScheduler] = []
        self.expired = 0
        """Reservations the binder found expired (their pods went back to the queue)."""

    async def start(self, replicas: int) -> None:
        kinds = [("node", n) for n in self._nodes]
        kinds += [(kind, o) for kind, objs in self._objects.items() for o in objs]
        for kind, obj in kinds:
            self._log.append(None)
            allocatable = node_allocatable(obj) if isinstance(obj, Node) else None
            key = object_key(kind, obj.metadata)
            entry = ProjectedEntry(
                len(self._log), kind, key, msgspec.json.encode(obj), allocatable=allocatable
            )
            await self.store.apply([entry])
        self.replicas = [self._replica() for _ in range(replicas)]

    def _replica(self) -> BatchScheduler:
        cache = loaded_cache(self._nodes, (), self._objects)
        fed = [len(self._log)]

        async def caught_up(seq: int) -> bool:
            entries = [e for e in self._log[fed[0] : seq] if e is not None]
            fed[0] = max(fed[0], seq)
            scheduler.versions.watch(e.object for e in entries)
            pending.apply(entries)
            cache.apply(entries)
            return True

        seeded = random.Random(self.rng.getrandbits(64))  # the tie-breaks too
        framework = Framework(
            default_profile(), in_tree_registry(), listers=cache.listers, rng=seeded
        )
        scheduler, pending = batch_scheduler(
            cache,
            self.shared,
            list(self.pods.values()),
            framework=framework,
            retries=3,
            catch_up=caught_up,
            clock=self.clock,
        )
        return scheduler

    async def _record(self, pod: Pod) -> None:
        """The informer records a Binding: the log, then the store's projection."""
        seq = len(self._log) + 1
        self._log.append(PodEntry(seq=seq, type="MODIFIED", object=pod, origin="binding"))
        charge = PodCharge(
            pod.metadata.uid or "", pod.spec.node_name, {**pod_requests(pod), PODS: 1}
        )
        key = object_key("pod", pod.metadata)
        await self.store.apply([ProjectedEntry(seq, "pod", key, msgspec.json.encode(pod), charge)])

    async def bind(self, share: float) -> None:
        """The binder claims about ``share`` of the reservations and binds them."""
        assumed = await self.shared.assumed()
        claims = [
            BindClaim(uid, a.node, a.attempt)
            for uid, a in assumed.items()
            if self.rng.random() < share
        ]
        for _ in range(self.rng.randrange(4)):
            await asyncio.sleep(0)
        # Read the clock in the same step as the claim, as a binder does within its
        # call (a jump of the fake clock meanwhile would be a skew of 30 s).
        granted = await self.store.begin_bind(claims, self.clock.now()) if claims else []
        for claim, ok in zip(claims, granted, strict=True):
            if not ok:  # expired before the binder came: the queue tries it again
                self.pending.add(claim.uid)
                self.expired += 1
            else:
                pod = self.pods[claim.uid]
                spec = msgspec.structs.replace(pod.spec, node_name=claim.node)
                await self._record(msgspec.structs.replace(pod, spec=spec))

    async def round(self) -> None:
        """Every pending pod attempted once more by one replica or the other, in
        batches of 1-3, while the binder binds now and then."""
        uids = sorted(self.pending)
        self.rng.shuffle(uids)
        for uid in uids:
            self._attempts[uid] += 1
        await self.store.set_leases({uid: self._attempts[uid] for uid in uids})
        batches: list[list[list[str]]] = [[] for _ in self.replicas]
        while uids:
            size = self.rng.randint(1, 3)
            batches[self.rng.randrange(len(self.replicas))].append(uids[:size])
            uids = uids[size:]

        async def serve(scheduler: BatchScheduler, mine: list[list[str]]) -> None:
            for batch in mine:
                if self._jumps and self.rng.random() < 0.2:  # a slow moment
                    self.clock.step(self.rng.choice(self._jumps))
                await scheduler.expire(self.clock.now())  # as the service does first
                seq = len(self._log)
                requests = [schedule_request(self.pods[u], self._attempts[u], seq) for u in batch]
                outcome = await scheduler.run(requests)
                self.pending.difference_update(b.uid for b in outcome.binds)

        async def binder() -> None:
            for _ in range(self.rng.randint(1, 4)):
                await self.bind(self.rng.random())

        await asyncio.gather(*map(serve, self.replicas, batches), binder())

    async def run(self, rounds: int = 3) -> list[Violation]:
        """Race ``rounds`` rounds, bind what is left reserved, and judge the store."""
        for _ in range(rounds):
            if self.pending:
                await self.round()
        await self.bind(1.0)
        return await store_violations(self.store)
