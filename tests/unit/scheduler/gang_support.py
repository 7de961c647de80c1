"""Scheduler replicas serving pod groups (Coscheduling) on one in-memory store, each
SchedulerService on its own in-memory bus, so a test hands each replica the requests it
chooses, as the queue's batches would; and a :class:`Gate` that holds every replica's
first rejection of waiting pods until all of them have decided one, so their
PostFilters run on views that each still count the other groups' reservations.

The informer's work is done by hand before the replicas start (they load it from the
store), the queue's by :meth:`Replicas.schedule` (leases, ScheduleBatch), and the
binder's is left undone: what the replicas decided stays in the store (waiting pods,
reservations) and on their buses (BindRequests, results)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import msgspec

from contracts import topology
from contracts.k8s import POD_GROUP_LABEL, Node, ObjectMeta, Pod, PodGroup, PodGroupSpec
from contracts.messages import (
    AttemptResult,
    BindBatch,
    BindRequest,
    ResultBatch,
    ScheduleBatch,
    ScheduleRequest,
)
from services.common.bus import Delivery, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.resources import node_allocatable
from services.common.settings import SchedulerSettings
from services.common.store import MemoryStore, ProjectedEntry
from services.framework.config import load_config
from services.informer.validate import object_key
from services.scheduler.service import SchedulerService
from tests.builders import make_node, make_pod

START = 1_700_000_000.0


def gang_profiles() -> Any:
    """The default profile with Coscheduling everywhere (its QueueSort alone)."""
    plugins = {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
    }
    args = [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}}]
    profile = {"schedulerName": "default-scheduler", "plugins": plugins, "pluginConfig": args}
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }
    return load_config(config).profiles


def pod_group(name: str, min_member: int) -> PodGroup:
    meta = ObjectMeta(name=name, namespace="default", creation_timestamp="2026-01-01T00:00:00Z")
    return PodGroup(metadata=meta, spec=PodGroupSpec(min_member=min_member))


def member(name: str, group: str, cpu: str = "1") -> Pod:
    return make_pod(name, requests={"cpu": cpu}, labels={POD_GROUP_LABEL: group})


def node(name: str, cpu: str) -> Node:
    return make_node(name, allocatable={"cpu": cpu, "pods": 110})


class Gate:
    """Holds each replica's first rejection of waiting pods (``reject_waiting`` or
    ``release_waiting``) until every replica has come to its own; later ones pass."""

    def __init__(self, parties: int) -> None:
        self._barrier = asyncio.Barrier(parties)
        self._passed: set[str] = set()
        self.closed = parties > 1

    async def wait(self, replica: str) -> None:
        if self.closed and replica not in self._passed:
            self._passed.add(replica)
            await self._barrier.wait()


class GatedStore:
    """One replica's client of the store, its waiting-pod rejections held by the gate."""

    def __init__(self, store: MemoryStore, gate: Gate, replica: str) -> None:
        self._store, self._gate, self._replica = store, gate, replica

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def reject_waiting(self, *args: Any) -> Any:
        await self._gate.wait(self._replica)
        return await self._store.reject_waiting(*args)

    async def release_waiting(self, *args: Any) -> Any:
        await self._gate.wait(self._replica)
        return await self._store.release_waiting(*args)


class Replica:
    """One SchedulerService on its own bus, with what it published."""

    def __init__(self, name: str, store: GatedStore, clock: FakeClock) -> None:
        self.name = name
        self.bus = MemoryBus()
        self.binds: list[BindRequest] = []
        self.results: list[AttemptResult] = []
        settings = SchedulerSettings(replica=name, seed=1)
        self.service = SchedulerService(
            self.bus,
            store,  # type: ignore[arg-type]
            clock,
            gang_profiles(),
            settings=settings,
        )

    async def start(self) -> None:
        await self.bus.declare(topology.QUEUES)
        binds = msgspec.json.Decoder(BindBatch)
        results = msgspec.json.Decoder(ResultBatch)

        async def on_binds(deliveries: Sequence[Delivery]) -> None:
            self.binds += [r for d in deliveries for r in binds.decode(d.body).requests]

        async def on_results(deliveries: Sequence[Delivery]) -> None:
            self.results += [r for d in deliveries for r in results.decode(d.body).results]

        await self.bus.consume_raw(topology.BINDER_REQUESTS, on_binds)
        await self.bus.consume_raw(topology.QUEUE_RESULTS, on_results)
        await self.service.start()

    async def stop(self) -> None:
        await self.service.stop()
        await self.bus.close()


class Replicas:
    def __init__(self, count: int) -> None:
        self.store = MemoryStore()
        """The informer's client (and the test's)."""
        self.clock = FakeClock(START)
        self.gate = Gate(count)
        self.replicas = [
            Replica(f"r{i}", GatedStore(self.store.client(), self.gate, f"r{i}"), self.clock)
            for i in range(count)
        ]
        self.pods: dict[str, Pod] = {}
        self._seq = 0

    async def start(self, nodes: Sequence[Node], groups: Sequence[PodGroup], pods: Sequence[Pod]):
        """Record the cluster in the store (the informer), then start every replica."""
        for n in nodes:
            await self._apply("node", n, node_allocatable(n))
        for group in groups:
            await self._apply("podgroup", group)
        for pod in pods:
            self.pods[pod.metadata.name] = pod
            await self._apply("pod", pod)
        for replica in self.replicas:
            await replica.start()

    async def _apply(self, kind: str, obj: Any, allocatable: Any = None) -> None:
        self._seq += 1
        key = object_key(kind, obj.metadata)
        entry = ProjectedEntry(self._seq, kind, key, msgspec.json.encode(obj), None, allocatable)
        await self.store.apply([entry])

    async def schedule(self, *batches: Sequence[str]) -> None:
        """Hand batch ``i`` (pod names) to replica ``i``, all at once, as the queue
        would (a lease per pod), and wait until every replica is done."""
        names = [name for batch in batches for name in batch]
        await self.store.set_leases({self.uid(name): 1 for name in names})
        for replica, batch in zip(self.replicas, batches, strict=False):
            requests = [self._request(name) for name in batch]
            body = msgspec.json.encode(ScheduleBatch(requests=requests))
            message = Message(topology.SCHEDULE.name, topology.SCHEDULE_KEY, body)
            await replica.bus.publish([message])
        await asyncio.gather(*(replica.bus.wait_idle() for replica in self.replicas))

    def uid(self, name: str) -> str:
        return self.pods[name].metadata.uid or ""

    def _request(self, name: str) -> ScheduleRequest:
        meta = self.pods[name].metadata
        return ScheduleRequest(
            uid=self.uid(name),
            namespace=meta.namespace or "default",
            name=meta.name,
            attempt=1,
            profile="default-scheduler",
            seq=self._seq,
        )

    def binds(self) -> dict[str, BindRequest]:
        """Every BindRequest of every replica, by pod name."""
        return {b.name: b for r in self.replicas for b in r.binds}

    def release_conflicts(self) -> float:
        """``ksched_store_release_conflicts_total``, summed over the replicas."""
        name = "ksched_store_release_conflicts_total"
        counts = [r.service.metrics.registry.get_sample_value(name) for r in self.replicas]
        return sum(c or 0.0 for c in counts)

    def results(self) -> dict[str, AttemptResult]:
        """The last attempt result of each pod, by pod name."""
        return {a.name: a for r in self.replicas for a in r.results}

    async def stop(self) -> None:
        for replica in self.replicas:
            await replica.stop()
