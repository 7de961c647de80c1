"""The scheduler service's test harness: a SchedulerService on the in-memory bus and
store with a FakeClock, a fake queue (publishes requests by reference) and a fake
binder (collects bind requests, results and Events)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from opentelemetry.trace import Tracer

from contracts import topology
from contracts.events import ClusterBatch, NodeEntry, PodEntry
from contracts.k8s import Event, Node, Pod
from contracts.messages import BindBatch, ResultBatch, ScheduleBatch, ScheduleRequest
from contracts.topology import QueueBinding, QueueSpec
from services.common.bus import Delivery, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.resources import node_allocatable
from services.common.settings import SchedulerSettings
from services.common.store import ProjectedEntry
from services.common.store.memory import MemoryStore
from services.scheduler.service import SchedulerService

EVENTS = QueueSpec(
    "test.events", (QueueBinding(topology.DECISIONS.name, "event.#"),), durable=False
)


class Harness:
    """A scheduler with a fake queue (publishes requests) and a fake binder (collects)."""

    def __init__(self, tracer: Tracer | None = None) -> None:
        self.bus = MemoryBus()
        self.store = MemoryStore()
        self.clock = FakeClock()
        self.seq = 0
        self.binds: list = []
        self.results: list = []
        self.events: list[Event] = []
        self.service = SchedulerService(
            self.bus,
            self.store,
            self.clock,
            settings=SchedulerSettings(replica="r1", seed=1),
            tracer=tracer,
        )

    async def start(self) -> None:
        await self.bus.declare(topology.QUEUES)
        await self.bus.consume_raw(topology.BINDER_REQUESTS, self._collect(BindBatch, self.binds))
        await self.bus.consume_raw(topology.QUEUE_RESULTS, self._collect(ResultBatch, self.results))
        await self.bus.consume_raw(EVENTS, self._collect(Event, self.events))
        await self.service.start()

    def _collect(self, kind, into):
        decoder = msgspec.json.Decoder(kind)

        async def handler(deliveries: Sequence[Delivery]) -> None:
            for d in deliveries:
                message = decoder.decode(d.body)
                into.extend(getattr(message, "requests", getattr(message, "results", [message])))

        return handler

    async def add_node(self, node: Node, publish: bool = False) -> None:
        self.seq += 1
        body = msgspec.json.encode(node)
        entry = ProjectedEntry(
            self.seq, "node", node.metadata.name, body, allocatable=node_allocatable(node)
        )
        await self.store.apply([entry])
        if publish:
            batch = ClusterBatch(events=[NodeEntry(seq=self.seq, type="ADDED", object=node)])
            await self.bus.publish([Message(topology.CLUSTER.name, "", msgspec.json.encode(batch))])

    async def add_pod(self, pod: Pod) -> None:
        """The informer's work for a pending pod: the store, then the cluster feed."""
        self.seq += 1
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        await self.store.apply([ProjectedEntry(self.seq, "pod", key, msgspec.json.encode(pod))])
        batch = ClusterBatch(events=[PodEntry(seq=self.seq, type="ADDED", object=pod)])
        await self.bus.publish([Message(topology.CLUSTER.name, "", msgspec.json.encode(batch))])

    async def schedule(
        self,
        *pods: Pod,
        seq: int | None = None,
        lease: bool = True,
        trace: dict[str, str] | None = None,
        add: bool = True,
    ) -> None:
        """Request ``pods`` as the queue would, by reference (``add``: after the
        informer's work for each, so the scheduler's projection holds them)."""
        for pod in pods if add else ():
            await self.add_pod(pod)
        if lease:
            await self.store.set_leases({p.metadata.uid: 1 for p in pods})
        requests = [
            ScheduleRequest(
                uid=p.metadata.uid,
                namespace=p.metadata.namespace,
                name=p.metadata.name,
                attempt=1,
                profile="default-scheduler",
                seq=seq or self.seq,
                trace=trace or {},
            )
            for p in pods
        ]
        body = msgspec.json.encode(ScheduleBatch(requests=requests))
        await self.bus.publish([Message(topology.SCHEDULE.name, topology.SCHEDULE_KEY, body)])
