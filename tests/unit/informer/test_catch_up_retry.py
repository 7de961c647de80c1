"""A catch-up that fails (the broker is down when the informer republishes the log's
tail) is remembered and run again, before the next batch or by the once-a-second store
check, until it succeeds: the entries reach ``ksched.cluster`` without another fault."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec

from contracts import topology
from contracts.kinds import KubeObject, kind_of
from contracts.topology import QueueSpec
from services.common.bus import BusError, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog import MemoryEventLog
from services.common.store.memory import MemoryStore
from services.informer.service import STORE_CHECK_PERIOD, InformerService
from tests.builders import make_node, make_pod

WATCH = QueueSpec("test.cluster", (topology.QueueBinding(topology.CLUSTER.name, ""),))


class FlakyBus(MemoryBus):
    """Refuses publishes on ``ksched.cluster`` while ``down`` (or ``failures`` times)."""

    def __init__(self) -> None:
        super().__init__(unavailable_pause=0.001)
        self.down = False
        self.failures = 0

    async def publish(self, messages: Sequence[Message]) -> None:
        if any(m.exchange == topology.CLUSTER.name for m in messages):
            if self.down or self.failures > 0:
                self.failures = max(0, self.failures - 1)
                raise BusError("the broker is down")
        await super().publish(messages)


def event(obj: KubeObject) -> Message:
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind_of(obj), "ADDED"), body)


async def republished(bus: MemoryBus) -> set[int]:
    async with bus.fetch(WATCH) as fetched:
        return {e["seq"] for d in fetched.deliveries for e in msgspec.json.decode(d.body)["events"]}


async def start() -> tuple[FlakyBus, InformerService, FakeClock]:
    bus, clock = FlakyBus(), FakeClock()
    await bus.declare([WATCH])
    informer = InformerService(bus, MemoryStore().client(), MemoryEventLog(), clock)
    await informer.start()
    await bus.publish([event(make_node("n0"))])
    await bus.wait_idle()
    return bus, informer, clock


async def test_a_failed_catch_up_is_run_again_before_the_next_batch() -> None:
    bus, informer, _ = await start()
    bus.failures = 2  # the commit's publish, then its catch-up's
    await bus.publish([event(make_pod("p0", uid="u-0"))])
    await bus.wait_idle()  # the batch came back as a duplicate: it commits nothing

    assert 2 in await republished(bus)
    assert not informer._catch_up_due
    await informer.stop()


async def test_a_quiet_informer_retries_a_failed_catch_up_every_check_period() -> None:
    bus, informer, clock = await start()
    await informer._stop_consuming()  # quiet: no batch will trigger it
    async with informer._lock:
        bus.down = True
        try:
            await informer._catch_up()
        except BusError:
            pass
    assert informer._catch_up_due

    await clock.advance(STORE_CHECK_PERIOD)  # still down: stays due
    await asyncio.sleep(0)
    assert informer._catch_up_due
    bus.down = False
    await clock.advance(STORE_CHECK_PERIOD)
    for _ in range(1000):
        if not informer._catch_up_due:
            break
        await asyncio.sleep(0)

    assert not informer._catch_up_due
    assert 1 in await republished(bus)
    await informer.stop()


class GatedBus(FlakyBus):
    """Holds publishes on ``ksched.cluster`` until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.held = asyncio.Event()

    async def publish(self, messages: Sequence[Message]) -> None:
        if any(m.exchange == topology.CLUSTER.name for m in messages) and not self.gate.is_set():
            self.held.set()
            await self.gate.wait()
        await super().publish(messages)


async def test_the_store_check_does_not_catch_up_after_a_batch_that_committed() -> None:
    bus, clock = GatedBus(), FakeClock()
    await bus.declare([WATCH])
    informer = InformerService(bus, MemoryStore().client(), MemoryEventLog(), clock)
    await informer.start()
    catch_ups = 0
    catch_up = informer._catch_up

    async def counted() -> None:
        nonlocal catch_ups
        catch_ups += 1
        await catch_up()

    informer._catch_up = counted  # type: ignore[method-assign]
    bus.gate.clear()
    await bus.publish([event(make_node("n0"))])
    await asyncio.wait_for(bus.held.wait(), timeout=5)  # the commit is publishing
    await clock.advance(STORE_CHECK_PERIOD)  # the check runs while it does
    for _ in range(20):
        await asyncio.sleep(0)
    bus.gate.set()
    await bus.wait_idle()
    for _ in range(20):
        await asyncio.sleep(0)

    assert catch_ups == 0  # the batch finished: nothing was left to repair
    assert 1 in await republished(bus)
    await informer.stop()
