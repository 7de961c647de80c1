"""A deposed informer (another one took the lease over while this one was paused)
writes nothing and acknowledges nothing: its store write is refused for its fencing
token, a batch that appends nothing is refused by its lease, and either way the batch
goes back to the queue for the leader and :attr:`InformerService.deposed` is set (the
process then exits, services.cli.runtime)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import msgspec
import pytest

from contracts import topology
from contracts.messages import BoundBatch, BoundPod
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.decisions import binding_for
from services.common.eventlog.memory import MemoryEventLog
from services.common.leaderelection import LeaderElector
from services.common.settings import LeaderElectionSettings
from services.common.store import Fence, MemoryStore
from services.informer.service import InformerService
from tests.builders import make_node, make_pod

LEASE = LeaderElectionSettings(identity="a")


@dataclass
class Deposable:
    bus: MemoryBus
    store: MemoryStore
    clock: FakeClock
    informer: InformerService
    elector: LeaderElector
    stopped: asyncio.Event

    async def take_over(self) -> None:
        """Another informer ("b") takes the lease over once it expired."""
        other = self.store.client()
        later = self.clock.now() + LEASE.lease_duration
        granted, _ = await other.acquire_lease("informer", "b", LEASE.lease_duration, later)
        assert granted

    async def publish(self, message: Message) -> None:
        await self.bus.publish([message])
        async with asyncio.timeout(5):
            await self.informer.deposed.wait()


@pytest.fixture
async def deposable() -> AsyncIterator[Deposable]:
    bus, store, clock = MemoryBus(unavailable_pause=0.01), MemoryStore("t"), FakeClock()
    started, stopped = asyncio.Event(), asyncio.Event()

    def lead(token: int) -> None:
        store.fence(Fence("informer", token))
        started.set()

    elector = LeaderElector(
        store, clock, "informer", LEASE, on_started_leading=lead, on_stopped_leading=stopped.set
    )
    leading = asyncio.create_task(elector.run())
    async with asyncio.timeout(5):
        await started.wait()
    informer = InformerService(bus, store, MemoryEventLog(), clock, confirm=elector.confirm)
    await informer.leadership.claim(elector.token)
    await informer.start()
    await bus.publish([_event(make_node("n1"))])
    await bus.wait_idle()
    yield Deposable(bus, store, clock, informer, elector, stopped)
    await informer.stop()
    leading.cancel()
    await asyncio.gather(leading, return_exceptions=True)
    await bus.close()


def _event(obj: object, type_: str = "ADDED") -> Message:
    body = msgspec.json.encode({"type": type_, "object": obj})
    kind = "node" if type_ == "ADDED" and "Node" in type(obj).__name__ else "pod"
    return Message(topology.EVENTS.name, topology.event_key(kind, type_), body)


async def test_its_store_write_is_refused_and_the_pod_goes_back_for_the_leader(
    deposable: Deposable,
) -> None:
    await deposable.take_over()
    await deposable.publish(_event(make_pod("p", uid="u-p")))
    assert "default/p" not in await deposable.store.client().objects("pod")
    assert deposable.informer.deposed.is_set()


async def test_a_batch_that_appends_nothing_is_refused_by_its_lease(
    deposable: Deposable,
) -> None:
    """A Binding for a pod this informer never saw (its successor ingested it) would be
    dropped as stale by its view, and acknowledged: its lease refuses it first."""
    await deposable.take_over()
    unseen = make_pod("q", uid="u-q")
    bound = BoundBatch(bindings=[BoundPod(binding=binding_for(unseen, "n1"), trace={})])
    body = msgspec.json.encode(bound)
    await deposable.publish(Message(topology.BOUND.name, topology.BOUND_KEY, body))
    assert deposable.informer.deposed.is_set()
    async with asyncio.timeout(5):  # the elector stops leading at once, not at a renewal
        await deposable.stopped.wait()
    assert "was refused" in deposable.elector.reason
