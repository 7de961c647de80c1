"""The snapshot writer's policy, on a fake clock: every N entries or T seconds of a
grown log, one at a time, from the informer's view at a seq it has applied; then
retention drops what the snapshot covers beyond the window."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from contracts.events import NodeEntry
from services.common.clock import FakeClock
from services.common.eventlog import MemoryEventLog, read_all
from services.common.eventlog.snapshot import newest
from services.informer.snapshots import SnapshotPolicy, SnapshotWriter
from services.informer.state import ClusterObjects
from tests.builders import make_node


@dataclass(frozen=True)
class Step:
    wait: float
    """Seconds the clock moves before the batch."""
    entries: int
    """Entries the batch appends (0: a quiet check, as the informer's store check)."""


@dataclass(frozen=True)
class Case:
    policy: SnapshotPolicy
    steps: list[Step]
    written: list[int]
    first: int
    """The seq of the first entry the log holds at the end."""


CASES = {
    "every-n-entries": Case(
        SnapshotPolicy(every=10, interval=0, retention=3),
        [Step(0, 4), Step(0, 4), Step(0, 4), Step(0, 9), Step(0, 1), Step(0, 10)],
        [12, 22, 32],
        30,
    ),
    "every-t-seconds-of-a-grown-log": Case(
        SnapshotPolicy(every=0, interval=60, retention=0),
        [Step(30, 2), Step(30, 1), Step(59, 5), Step(1, 0), Step(120, 0), Step(0, 1)],
        [3, 8, 9],
        10,
    ),
    "never": Case(
        SnapshotPolicy(every=0, interval=0, retention=0),
        [Step(600, 100), Step(600, 100)],
        [],
        1,
    ),
    "a-window-longer-than-the-log-drops-nothing": Case(
        SnapshotPolicy(every=5, interval=0, retention=100),
        [Step(0, 6), Step(0, 6)],
        [6, 12],
        1,
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
async def test_the_writer_takes_snapshots_as_its_policy_says(case: Case) -> None:
    log, clock, view = MemoryEventLog(), FakeClock(), ClusterObjects()
    writer = SnapshotWriter(log, clock, case.policy)
    await writer.start()
    for step in case.steps:
        await clock.advance(step.wait)
        first = log.last_seq() + 1
        batch = [
            NodeEntry(seq=s, type="ADDED", object=make_node(f"n{s}"))
            for s in range(first, first + step.entries)
        ]
        await log.append(batch)
        for entry in batch:
            view.reconcile("node", entry.object.metadata.name, "ADDED", entry.object)
        writer.maybe_take(view, log.last_seq())
        await writer.wait()
    assert writer.written == case.written
    entries = await read_all(log)
    assert (entries[0].seq if entries else log.last_seq() + 1) == case.first
    snapshot = await newest(log)
    if case.written:
        assert snapshot is not None and snapshot.seq == case.written[-1]
        names = {e.object.metadata.name for e in snapshot.entries}
        assert names == {f"n{s}" for s in range(1, snapshot.seq + 1)}  # the view at its seq
    else:
        assert snapshot is None


async def test_a_restarted_writer_counts_from_the_newest_snapshot() -> None:
    log, clock, view = MemoryEventLog(), FakeClock(), ClusterObjects()
    await log.append([NodeEntry(seq=s, type="ADDED", object=make_node(f"n{s}")) for s in (1, 2)])
    for entry in await read_all(log):
        view.reconcile("node", entry.object.metadata.name, "ADDED", entry.object)
    policy = SnapshotPolicy(every=2, interval=0, retention=0)
    first = SnapshotWriter(log, clock, policy)
    await first.start()
    assert first.maybe_take(view, 2)
    await first.wait()
    second = SnapshotWriter(log, clock, policy)
    await second.start()
    assert not second.maybe_take(view, 2)  # the log's newest snapshot is at 2 already


async def test_a_failed_write_is_due_again_at_the_next_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Refusing(MemoryEventLog):
        fail = True

        async def write_snapshot(self, seq: int, body: bytes) -> None:
            if self.fail:
                raise OSError(28, "No space left on device")
            await super().write_snapshot(seq, body)

    log, clock, view = Refusing(), FakeClock(), ClusterObjects()
    await log.append([NodeEntry(seq=1, type="ADDED", object=make_node("n1"))])
    writer = SnapshotWriter(log, clock, SnapshotPolicy(every=1, interval=0, retention=0))
    await writer.start()
    assert writer.maybe_take(view, 1)
    await writer.wait()
    assert writer.written == []
    assert "writing the snapshot at seq 1 failed" in caplog.text
    log.fail = False
    assert writer.maybe_take(view, 1)
    await writer.wait()
    assert writer.written == [1]
