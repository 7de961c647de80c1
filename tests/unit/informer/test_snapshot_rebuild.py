"""Snapshots end to end: a cold rebuild costs the state plus the tail, not the history
(the issue's log: 40 rounds of 2,000 pods added, bound and deleted over 20 nodes); the
informer takes snapshots as it ingests, and a file log trimmed by retention reopens,
rebuilds the store exactly as the whole log did, and replays its tail."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from contracts.events import LogEntry, NodeEntry, PodEntry
from services.cli.main import main
from services.cli.simulate import load_cluster, simulate
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog import (
    EventLog,
    FileEventLog,
    LogMismatchError,
    MemoryEventLog,
    read_all,
)
from services.common.eventlog.snapshot import KIND_ORDER, encode
from services.common.store.memory import MemoryStore
from services.informer import rebuild
from services.informer.outputs import projected as _projected
from services.informer.service import InformerService
from services.informer.snapshots import SnapshotPolicy, SnapshotWriter
from services.informer.state import ClusterObjects
from services.informer.validate import object_key
from tests.builders import make_node, make_pod
from tests.builders.eventlogs import churn
from tests.contract.store_support import snapshot as store_state
from tests.unit.cli.support import EXAMPLE
from tests.unit.informer.support import event_message

WINDOW = 6_000
TAIL = 2_000


class Counting:
    """The log, counting the entries a reader takes from it."""

    def __init__(self, log: EventLog) -> None:
        self._log, self.read_entries = log, 0

    def last_seq(self) -> int:
        return self._log.last_seq()

    async def latest_snapshot(self) -> tuple[int, bytes] | None:
        return await self._log.latest_snapshot()

    async def read(self, after: int = 0) -> AsyncIterator[LogEntry]:
        async for entry in self._log.read(after):
            self.read_entries += 1
            yield entry


def follow(view: ClusterObjects, batch: list[LogEntry]) -> None:
    """What the informer's view does with a batch it appended."""
    staged = view.stage()
    for entry in batch:
        kind = str(entry.__struct_config__.tag)
        staged.reconcile(kind, object_key(kind, entry.object.metadata), entry.type, entry.object)
    view.commit(staged)


@pytest.mark.parametrize("rounds", [4, 40])
async def test_a_cold_rebuild_reads_the_state_and_the_tail_not_the_history(rounds: int) -> None:
    log, view = MemoryEventLog(), ClusterObjects()
    writer = SnapshotWriter(
        log, FakeClock(), SnapshotPolicy(every=6_000, interval=0, retention=WINDOW)
    )
    for batch in churn(nodes=20, rounds=rounds, pods=2_000):
        await log.append(batch)
        follow(view, batch)
        writer.maybe_take(view, log.last_seq())
        await writer.wait()
    history = 20 + 3 * rounds * 2_000  # 240,020 entries for the 40 rounds
    assert log.last_seq() == history
    seq = history
    tail: list[LogEntry] = []
    for i in range(TAIL):  # pods added after the last snapshot, still pending
        seq += 1
        tail.append(PodEntry(seq=seq, type="ADDED", object=make_pod(f"tail-{i}", uid=f"t-{i}")))
    await log.append(tail)

    store, counting = MemoryStore(), Counting(log)
    rebuilt = await rebuild.ensure_live(store.client(), counting, _projected)  # type: ignore[arg-type]

    assert rebuilt is not None
    assert rebuilt.snapshot == history
    assert rebuilt.restored == 20 + TAIL  # the 20 nodes live at the snapshot, then the tail
    assert counting.read_entries == TAIL
    assert len(await read_all(log)) == WINDOW + TAIL  # retention kept the window only
    client = store.client()
    await client.attach()
    assert len(await client.objects("node")) == 20
    assert set(await client.objects("pod")) == {f"default/tail-{i}" for i in range(TAIL)}
    assert (await client.epoch()).seq == history + TAIL


async def test_the_informer_snapshots_and_a_trimmed_file_log_rebuilds_the_same_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    policy = SnapshotPolicy(every=4, interval=0, retention=2)
    nodes = [make_node(f"n{i}", allocatable={"cpu": "4", "pods": 10}) for i in range(3)]
    pods = [make_pod(f"p{i}", uid=f"u-{i}", requests={"cpu": "1"}) for i in range(6)]
    bound = [
        make_pod(f"b{i}", uid=f"b-{i}", node_name="n1", requests={"cpu": "1"}) for i in range(2)
    ]

    store, bus, clock = MemoryStore(), MemoryBus(), FakeClock()
    log = await FileEventLog.open(path)
    informer = InformerService(bus, store.client(), log, clock, snapshots=policy)
    await informer.start()
    writer = informer.snapshots
    assert writer is not None
    for batch in ([*nodes], pods[:3], [*bound, *pods[3:]], [pods[0]]):
        deleted = batch == [pods[0]]
        await bus.publish([event_message(o, "DELETED" if deleted else "ADDED") for o in batch])
        await bus.wait_idle()
        await writer.wait()  # one at a time: the next batch would skip it
    await informer.stop()
    await bus.close()
    assert writer.written == [6, 11]  # 3 nodes, 3 pods; 5 pods; 1 deletion
    expected = await store_state(store.client())
    await log.close()

    reopened = await FileEventLog.open(path)
    assert reopened.last_seq() == 12
    assert [e.seq for e in await read_all(reopened)] == [10, 11, 12]  # window 2 + tail 1
    store.flush()
    restarted = InformerService(
        MemoryBus(), store.client(), reopened, FakeClock(), snapshots=policy
    )
    await restarted.start()
    await restarted.stop()
    rebuilt = store.client()
    await rebuilt.attach()
    assert await store_state(rebuilt) == expected
    await reopened.close()


async def _record_and_trim(path: Path) -> tuple[int, list[LogEntry]]:
    """Record the bundled example's run, snapshot it two bindings in and drop what
    the snapshot covers; the snapshot's seq and the whole log as recorded."""
    documents = load_cluster(EXAMPLE.read_text(), str(EXAMPLE))
    await simulate(documents, seed=0, event_log=FileEventLog(path))
    log = await FileEventLog.open(path)
    entries = await read_all(log)
    at = next(e.seq for e in entries if e.origin == "binding") + 1
    view = ClusterObjects()
    follow(view, [e for e in entries if e.seq <= at])
    objects: list[tuple[str, Any]] = [(k, b) for k in KIND_ORDER for b in view.encoded_all(k)]
    await log.write_snapshot(at, encode(at, objects))
    await log.retain(at)
    await log.close()
    return at, entries


def test_a_trimmed_log_replays_its_tail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``ksched replay`` of a log whose head retention dropped: the cluster at the
    snapshot (pods bound before it on their nodes), then the tail's decisions."""
    path = tmp_path / "events.jsonl"
    at, entries = asyncio.run(_record_and_trim(path))

    assert main(["replay", str(path), "--seed", "0", "--check", "-o", "json"]) == 0
    summary = capsys.readouterr().err
    tail_bindings = sum(1 for e in entries if e.seq > at and e.origin == "binding")
    assert tail_bindings == 2
    assert f"replayed {tail_bindings} bindings; the log recorded {tail_bindings} " in summary
    assert f"after its snapshot at seq {at}" in summary
    assert "all match" in summary


async def test_a_live_store_behind_what_retention_kept_stops_the_informer_with_one_line() -> None:
    """A store replica that lost more than the window (it is live at seq 3, the log
    keeps 9 on): no entry can bring it up to date, and a live store is never restored
    over, so the informer stops and says how to rebuild it from the snapshot."""
    log, view, store = MemoryEventLog(), ClusterObjects(), MemoryStore()
    nodes = [make_node(f"n{i}") for i in range(1, 11)]
    batch: list[LogEntry] = [
        NodeEntry(seq=i, type="ADDED", object=n) for i, n in enumerate(nodes, 1)
    ]
    await log.append(batch)
    follow(view, batch)
    await store.client().apply([_projected(e) for e in batch[:3]])
    objects = [(k, b) for k in KIND_ORDER for b in view.encoded_all(k)]
    await log.write_snapshot(10, encode(10, objects))
    await log.retain(8)
    informer = InformerService(MemoryBus(), store.client(), log, FakeClock())
    with pytest.raises(LogMismatchError) as raised:
        await informer.start()
    assert str(raised.value) == (
        "the event log starts at seq 9: the entries from seq 4 on were dropped by retention "
        "and no snapshot in use covers them; empty the store to rebuild it from the newest "
        "snapshot"
    )
