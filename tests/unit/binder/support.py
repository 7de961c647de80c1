"""The binder beside the informer on the in-memory bus, store and event log, as the
binder tests drive it: publish the cluster as watch events, assume pods on a node as
the scheduler would, hand the binder one BindBatch, and read what went out."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import msgspec

from contracts import topology
from contracts.k8s import Pod
from contracts.messages import BindBatch, BindRequest
from services.binder.service import BinderService
from services.cli.runtime import build
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.settings import Settings, from_env
from services.common.store import Reservation
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService


class RecordingBus(MemoryBus):
    """A MemoryBus that remembers every publish call (one confirmed batch each)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[Message]] = []

    @property
    def published(self) -> list[Message]:
        """Every message published, in order."""
        return [m for batch in self.batches for m in batch]

    async def publish(self, messages: Sequence[Message]) -> None:
        self.batches.append(list(messages))
        await super().publish(messages)


def added(kind: str, obj: object) -> Message:
    """The informer's ADDED watch event for ``obj`` of ``kind``."""
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind, "ADDED"), body)


@asynccontextmanager
async def informer_and_binder(
    settings: Settings | None = None,
) -> AsyncIterator[tuple[RecordingBus, MemoryStore]]:
    """The informer and the binder ``build`` makes of ``settings`` (default: no
    variables set), started on one RecordingBus and MemoryStore; stopped afterwards."""
    bus, store = RecordingBus(), MemoryStore()
    informer = InformerService(bus, store, MemoryEventLog(), FakeClock())
    binder = build("binder", settings or from_env({}), bus, store)
    assert isinstance(binder, BinderService)
    await informer.start()
    await binder.start()
    try:
        yield bus, store
    finally:
        await binder.stop()
        await informer.stop()
        await bus.close()


async def assume_on(store: MemoryStore, pods: Sequence[Pod], node: str) -> None:
    """Lease ``pods`` and assume them on ``node``, as the scheduler would."""
    uids = [p.metadata.uid or "" for p in pods]
    await store.set_leases(dict.fromkeys(uids, 1))
    reservations = [
        Reservation(uid=u, node=node, attempt=1, requests={"pods": 1}, ttl=30) for u in uids
    ]
    statuses = [a.status for a in await store.assume(reservations, time.time())]
    assert statuses == ["assumed"] * len(pods)


def bind_batch(pods: Sequence[Pod], node: str) -> Message:
    """The scheduler's BindBatch binding ``pods`` to ``node`` (first attempt)."""
    requests = [
        BindRequest(
            uid=p.metadata.uid or "", namespace=p.metadata.namespace, name=p.metadata.name,
            node=node, attempt=1, profile=p.spec.scheduler_name,
        )
        for p in pods
    ]  # fmt: skip
    return Message(
        topology.BIND.name, topology.BIND_KEY, msgspec.json.encode(BindBatch(requests=requests))
    )
