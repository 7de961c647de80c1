"""The queue service's test harness: a QueueService on the in-memory bus and store with
a FakeClock, a fake informer (log entries into the store and onto ``ksched.cluster``)
and a fake scheduler (collects requests, answers on demand)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import msgspec

from contracts import topology
from contracts.events import ClusterBatch, EventType
from contracts.kinds import kind_of
from contracts.messages import AttemptResult, ResultBatch, ScheduleBatch, ScheduleRequest
from services.common.bus import Delivery, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.resources import node_allocatable, pod_requests
from services.common.settings import QueueSettings
from services.common.store import PodCharge, ProjectedEntry
from services.common.store.memory import MemoryStore
from services.informer.validate import object_key
from services.queue.service import QueueService
from tests.unit.queue.helpers import logged


class Harness:
    """A queue service with a fake informer (log entries into the store and onto
    ``ksched.cluster``) and a fake scheduler (collects requests, answers on demand)."""

    def __init__(
        self, store: MemoryStore | None = None, metrics_port: int | None = None, **options: Any
    ) -> None:
        self.bus = MemoryBus()
        self.store = store or MemoryStore()
        self.clock = FakeClock()
        self.settings = QueueSettings(**{"max_in_flight": 4, "dispatch_batch": 2, **options})
        self.metrics_port = metrics_port
        self.requests: list[ScheduleRequest] = []
        self.queue = self.new_service()
        self.seq = 0

    def new_service(self) -> QueueService:
        return QueueService(
            self.bus,
            self.store,
            self.clock,
            settings=self.settings,
            metrics_port=self.metrics_port,
        )

    async def start(self) -> None:
        await self.bus.declare(topology.QUEUES)
        await self.bus.consume_raw(topology.SCHEDULER_REQUESTS, self._collect)
        await self.queue.start()
        await self.settle()

    async def _collect(self, deliveries: Sequence[Delivery]) -> None:
        for d in deliveries:
            self.requests.extend(msgspec.json.decode(d.body, type=ScheduleBatch).requests)

    async def settle(self) -> None:
        for _ in range(3):
            await self.bus.wait_idle()
            for _ in range(10):
                await asyncio.sleep(0)

    async def apply(self, *objects: Any, type_: EventType = "ADDED", publish: bool = True) -> None:
        """Record ``objects`` as the next log entries; publish them unless told not to
        (then the queue finds them on its next resync)."""
        entries = []
        events = []
        for obj in objects:
            self.seq += 1
            event = logged(obj, type_)
            event = msgspec.structs.replace(event, seq=self.seq)
            events.append(event)
            entries.append(projected(event))
        await self.store.apply(entries)
        if publish:
            body = msgspec.json.encode(ClusterBatch(events=events))
            await self.bus.publish([Message(topology.CLUSTER.name, "", body)])
        await self.settle()

    async def answer(self, *results: tuple[ScheduleRequest, str, list[str]]) -> None:
        body = msgspec.json.encode(
            ResultBatch(
                results=[
                    AttemptResult(
                        uid=r.uid,
                        namespace=r.namespace or "default",
                        name=r.name,
                        attempt=r.attempt,
                        outcome=outcome,  # type: ignore[arg-type]
                        plugins=plugins,
                    )
                    for r, outcome, plugins in results
                ]
            )
        )
        await self.bus.publish([Message(topology.RESULTS.name, topology.RESULTS_KEY, body)])
        await self.settle()

    def names(self) -> list[str]:
        return [r.name for r in self.requests]

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds)
        await self.settle()


def projected(event: Any) -> ProjectedEntry:
    obj = event.object
    kind = kind_of(obj)
    deleted = event.type == "DELETED"
    body = None if deleted else msgspec.json.encode(obj)
    key = object_key(kind, obj.metadata)
    if kind == "pod":
        node = (
            None if deleted or obj.status.phase in ("Succeeded", "Failed") else obj.spec.node_name
        )
        charge = PodCharge(obj.metadata.uid, node, {**pod_requests(obj), "pods": 1})
        return ProjectedEntry(event.seq, kind, key, body, pod=charge)
    if kind == "node":
        return ProjectedEntry(
            event.seq, kind, key, body, allocatable=None if deleted else node_allocatable(obj)
        )
    return ProjectedEntry(event.seq, kind, key, body)
