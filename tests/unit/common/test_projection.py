"""LogProjection: the feed applied in seq order, duplicates skipped, a gap reloaded from
the store, entries that arrive during a load applied after it, failed loads retried, and
a lost store waited out and reloaded (in-memory store, fake clock, no sleeping)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec
import pytest

from contracts.events import LogEntry, PodEntry
from services.common.clock import FakeClock
from services.common.projection import LogProjection
from services.common.store import Epoch, ProjectedEntry, StoreLost
from services.common.store.memory import MemoryStore
from tests.builders import make_pod

log = logging.getLogger("test.projection")


def entry(seq: int) -> LogEntry:
    return PodEntry(seq=seq, type="ADDED", object=make_pod(f"p{seq}"))


async def tick_until(condition: Callable[[], bool]) -> None:
    """Let other tasks run until ``condition`` holds (bounded: fails instead of hanging)."""
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


def projected(seq: int) -> ProjectedEntry:
    body = msgspec.json.encode(make_pod(f"p{seq}"))
    return ProjectedEntry(seq, "pod", f"default/p{seq}", body)


class Informer:
    """The log's writer: applies entries to the store (the feed is up to each test)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store.client()
        self.seq = 0

    async def write(self, upto: int) -> None:
        while self.seq < upto:
            self.seq += 1
            await self.store.apply([projected(self.seq)])


@dataclass
class Follower:
    """A service's state: the pods it holds, what it was loaded and applied with."""

    store: MemoryStore
    pods: set[str] = field(default_factory=set)
    loads: list[tuple[int, bool]] = field(default_factory=list)
    """(epoch seq, whether the load was told the store was lost) per successful load."""
    applied: list[list[int]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    """Raised by the next loads, in order (after reading the store)."""
    gate: asyncio.Event | None = None
    """When set, a load waits for it before reading the objects (the epoch is read)."""
    loading: bool = False

    async def load(self, epoch: Epoch, lost: StoreLost | None) -> None:
        self.loading = True
        try:
            if self.gate is not None:
                await self.gate.wait()
            pods = set(await self.store.objects("pod"))
            if self.failures:
                raise self.failures.pop(0)
        finally:
            self.loading = False
        self.pods = pods
        self.loads.append((epoch.seq, lost is not None))

    def apply(self, entries: Sequence[LogEntry]) -> None:
        assert not self.loading, "an entry was applied while a load read the store"
        self.applied.append([e.seq for e in entries])
        self.pods.update(f"default/p{e.seq}" for e in entries)


class World:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.clock = FakeClock()
        self.informer = Informer(self.store)
        self.follower = Follower(self.store)
        self.projection = LogProjection(
            self.store,
            self.clock,
            log,
            load=self.follower.load,
            apply=self.follower.apply,
        )

    async def feed(self, *seqs: int) -> None:
        await self.projection.feed([entry(s) for s in seqs])


@dataclass(frozen=True)
class Case:
    name: str
    before: int
    """Entries in the store when the projection starts."""
    steps: Sequence[tuple[int, Sequence[int]]]
    """(entries in the store by then, the batch fed) in order."""
    applied: Sequence[Sequence[int]]
    """The runs ``apply`` was given."""
    loads: Sequence[int]
    """The epoch seq of each load."""


CASES = [
    Case("in order", 0, [(2, [1, 2]), (3, [3])], [[1, 2], [3]], [0]),
    Case("duplicates skipped", 0, [(2, [1, 2]), (3, [2, 3]), (3, [1, 3])], [[1, 2], [3]], [0]),
    Case("entries the load saw skipped", 2, [(3, [1, 2, 3])], [[3]], [2]),
    Case("a gap reloads", 1, [(5, [5]), (6, [6])], [[6]], [1, 5]),
    Case("a gap inside a batch", 0, [(4, [1, 3, 4])], [[1]], [0, 4]),
    Case("duplicates then a gap", 2, [(6, [1, 2, 5, 6]), (7, [7])], [[7]], [2, 6]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_follows_the_feed(case: Case) -> None:
    world = World()
    await world.informer.write(case.before)
    await world.projection.reload()
    for upto, batch in case.steps:
        await world.informer.write(upto)
        await world.feed(*batch)
    assert world.follower.applied == [list(run) for run in case.applied]
    assert [seq for seq, _ in world.follower.loads] == list(case.loads)
    assert world.projection.applied_seq == world.informer.seq
    assert world.projection.following
    assert world.follower.pods == {f"default/p{s}" for s in range(1, world.informer.seq + 1)}


async def test_entries_fed_before_the_first_load_wait_for_it() -> None:
    world = World()
    await world.informer.write(3)
    await world.feed(2, 3)
    await world.feed(4)  # the store does not have it yet when the load reads it
    assert world.follower.applied == [] and not world.projection.following
    await world.projection.reload()
    assert world.follower.loads == [(3, False)]
    assert world.follower.applied == [[4]]
    assert world.projection.applied_seq == 4


async def test_entries_fed_during_a_load_are_applied_after_it() -> None:
    world = World()
    await world.informer.write(2)
    world.follower.gate = asyncio.Event()
    loading = asyncio.create_task(world.projection.reload())
    await tick_until(lambda: world.follower.loading)
    await world.informer.write(4)
    await world.feed(1, 2, 3)
    await world.feed(4)
    assert world.follower.applied == []
    world.follower.gate.set()
    await loading
    assert world.follower.loads == [(2, False)]
    assert world.follower.applied == [[3, 4]]
    assert world.projection.applied_seq == 4


async def test_buffered_entries_past_the_load_are_applied_over_a_gap() -> None:
    """The load read seq 1, then objects that already hold entries 2..4: entry 4 from
    the feed is applied on top of them instead of loading again."""
    world = World()
    await world.informer.write(1)
    await world.feed(4)
    world.follower.gate = asyncio.Event()
    loading = asyncio.create_task(world.projection.reload())
    await tick_until(lambda: world.follower.loading)
    await world.informer.write(4)
    world.follower.gate.set()
    await loading
    assert world.follower.loads == [(1, False)]
    assert world.follower.applied == [[4]]
    assert world.projection.applied_seq == 4 and world.projection.following
    assert world.follower.pods == {f"default/p{s}" for s in range(1, 5)}


async def test_a_failed_load_stays_due_and_the_next_feed_retries_it() -> None:
    world = World()
    await world.informer.write(2)
    world.follower.failures.append(ConnectionError("redis down"))
    with pytest.raises(ConnectionError):
        await world.projection.reload()
    assert not world.projection.following and world.follower.loads == []
    await world.informer.write(3)
    world.follower.failures.append(ConnectionError("still down"))
    with pytest.raises(ConnectionError):
        await world.feed(3)  # the batch is redelivered by the bus
    await world.feed(3)
    assert world.follower.loads == [(3, False)]
    assert world.projection.following and world.projection.applied_seq == 3
    await world.informer.write(4)
    await world.feed(4)
    assert world.follower.applied == [[4]]


async def test_a_failed_gap_reload_keeps_the_entries_and_retries() -> None:
    world = World()
    await world.projection.reload()
    await world.informer.write(3)
    world.follower.failures.append(ConnectionError("redis down"))
    with pytest.raises(ConnectionError):
        await world.feed(2, 3)
    assert world.projection.applied_seq == 0
    await world.feed(3)
    assert world.follower.loads == [(0, False), (3, False)]
    assert world.projection.applied_seq == 3 and world.projection.following


async def test_a_failed_recovery_retried_by_the_feed_still_recovers() -> None:
    world = World()
    await world.informer.write(1)
    await world.projection.reload()
    world.store.flush()
    world.informer.store = world.store.client()
    await world.informer.store.restore([projected(1)], final=True)
    world.follower.failures.append(ConnectionError("redis down"))
    with pytest.raises(ConnectionError):
        await world.projection.reload(StoreLost("rebuilt"))
    await world.informer.write(2)
    await world.feed(2)
    assert world.follower.loads == [(1, False), (2, True)]


async def test_store_lost_during_a_load_is_waited_out_and_loaded_again() -> None:
    world = World()
    await world.informer.write(2)
    world.follower.failures.append(StoreLost("rebuilt meanwhile"))
    await world.projection.reload()
    assert world.follower.loads == [(2, True)]
    assert world.projection.epoch is not None and world.projection.epoch.state == "live"


async def test_a_lost_store_is_waited_for_then_loaded_with_lost() -> None:
    world = World()
    await world.informer.write(2)
    await world.projection.reload()
    world.store.flush()
    with pytest.raises(StoreLost):
        await world.store.leases()  # what a service call meets
    recovering = asyncio.create_task(world.projection.reload(StoreLost("flushed")))
    await tick_until(lambda: world.clock.sleepers > 0)
    await world.feed(1, 2, 3)  # buffered: the projection waits for a rebuilt store
    assert world.follower.applied == []
    rebuilder = world.store.client()
    await rebuilder.restore([projected(1), projected(2)], final=True)  # from the log
    await world.clock.advance(1)
    await recovering
    assert world.follower.loads == [(2, False), (2, True)]
    assert world.follower.applied == [[3]]
    assert world.projection.applied_seq == 3
    await world.store.leases()  # attached to the new epoch


async def test_concurrent_recoveries_load_once() -> None:
    world = World()
    await world.informer.write(1)
    await world.projection.reload()
    world.store.flush()
    await world.store.client().restore([], final=True)
    lost = StoreLost("rebuilt")
    await asyncio.gather(world.projection.reload(lost), world.projection.reload(lost))
    assert world.follower.loads == [(1, False), (0, True)]


async def test_a_blank_store_is_an_empty_cluster_until_a_projection_attached() -> None:
    world = World()
    await world.projection.reload()
    assert world.follower.loads == [(0, False)]
    assert world.projection.epoch is not None and world.projection.epoch.state == "blank"
    await world.informer.write(1)
    await world.feed(1)
    assert world.follower.applied == [[1]]


async def test_wait_for_a_seq() -> None:
    world = World()
    await world.projection.reload()
    assert await world.projection.wait_for(0, within=30)
    waiting = asyncio.create_task(world.projection.wait_for(2, within=30))
    await world.informer.write(2)
    await world.feed(1)
    await asyncio.sleep(0)
    assert not waiting.done()
    await world.feed(2)
    assert await waiting


async def test_wait_for_gives_up_after_the_timeout() -> None:
    world = World()
    await world.projection.reload()
    waiting = asyncio.create_task(world.projection.wait_for(5, within=30))
    await tick_until(lambda: world.clock.sleepers > 0)
    await world.clock.advance(29)
    assert not waiting.done()
    await world.clock.advance(1)
    assert not await waiting


async def test_after_a_store_lost_a_blank_store_is_waited_for() -> None:
    """A projection that loaded a Blank store (a fresh cluster) and then met StoreLost
    (the store is being rebuilt) waits for the live store instead of loading nothing."""
    world = World()
    await world.projection.reload()
    recovering = asyncio.create_task(world.projection.reload(StoreLost("being rebuilt")))
    await tick_until(lambda: world.clock.sleepers > 0)
    await world.store.client().restore([projected(1)], final=True)
    await world.clock.advance(1)
    await recovering
    assert world.follower.loads == [(0, False), (1, True)]
