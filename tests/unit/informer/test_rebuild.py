"""The informer against a store that comes back empty and an event log that refuses
appends: the store is rebuilt from the log (one WARNING line), ingest stops while the
log refuses and resumes without losing or repeating an entry."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest

from contracts import topology
from contracts.events import LogEntry
from contracts.kinds import KubeObject, kind_of
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog import EventLog, FileEventLog, MemoryEventLog
from services.common.store import Epoch
from services.common.store.memory import MemoryStore
from services.informer import rebuild
from services.informer.outputs import projected as _projected
from services.informer.service import STORE_CHECK_PERIOD, InformerService
from tests.builders import make_node, make_pod


def event(obj: KubeObject, type_: str = "ADDED") -> Message:
    body = msgspec.json.encode({"type": type_, "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind_of(obj), type_), body)


NODES = [make_node(f"n{i}") for i in range(3)]
PODS = [make_pod(f"p{i}", uid=f"u-{i}") for i in range(5)]


@dataclass
class Cluster:
    bus: MemoryBus
    store: MemoryStore
    log: EventLog
    clock: FakeClock
    informer: InformerService

    async def send(self, *objects: KubeObject) -> None:
        await self.bus.publish([event(o) for o in objects])
        await self.bus.wait_idle()

    async def stored(self) -> tuple[set[str], set[str]]:
        return set(await self.store.objects("node")), set(await self.store.objects("pod"))


async def open_cluster(log: EventLog, store: MemoryStore | None = None) -> Cluster:
    bus, clock = MemoryBus(), FakeClock()
    store = store or MemoryStore()
    informer = InformerService(bus, store.client(), log, clock)
    await informer.start()
    return Cluster(bus, store, log, clock, informer)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = await open_cluster(MemoryEventLog())
    yield c
    await c.informer.stop()
    await c.bus.close()


def rebuilds(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "lost the cluster's projection" in r.getMessage()
    ]


ALL = ({f"n{i}" for i in range(3)}, {f"default/p{i}" for i in range(5)})


async def tick_until(condition: Callable[[], bool]) -> None:
    """Let the loop run (the log writes in a worker thread) until ``condition`` holds."""
    for _ in range(100_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def test_a_store_emptied_while_running_is_rebuilt_before_the_next_event(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.send(*NODES, *PODS[:4])
    cluster.store.flush()
    await cluster.send(PODS[4])

    assert await cluster.stored() == ALL  # the nodes (the log's first entries) came back
    assert cluster.log.last_seq() == 8  # the redelivered event was not logged twice
    assert (await cluster.store.epoch()).seq == 8
    [line] = rebuilds(caplog)
    # seq 8 reached the log before the store refused it: it is rebuilt with the rest
    assert "found it blank): rebuilt 8 event log entries up to seq 8" in line
    assert "node: 3, pod: 5" in line
    assert cluster.informer.ready


async def test_a_quiet_informer_notices_the_loss_within_its_check_period(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.send(*NODES, *PODS)
    cluster.store.flush()
    await cluster.clock.advance(STORE_CHECK_PERIOD)
    await cluster.bus.wait_idle()

    assert await cluster.stored() == ALL
    assert len(rebuilds(caplog)) == 1


@pytest.mark.parametrize(
    ("crashed_after", "left", "restored", "found"),
    [
        (None, Epoch("blank"), [2, 2, 2, 2], "found it blank"),
        # a rebuild that died after restoring seqs 1..2 (CHUNK = 2) is continued
        (4, Epoch("building", seq=2), [2, 2, 2], "found it building at seq 2"),
    ],
    ids=["blank", "interrupted-by-a-crash"],
)
async def test_a_restarted_informer_rebuilds_from_the_whole_log_in_chunks(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    crashed_after: int | None,
    left: Epoch,
    restored: list[int],
    found: str,
) -> None:
    """The seen failure: the tail is not enough, the nodes are the log's first entries.
    ``crashed_after``: an informer read that many log entries while rebuilding, then
    died (the store was left Building)."""
    monkeypatch.setattr(rebuild, "CHUNK", 2)
    log = MemoryEventLog()
    first = await open_cluster(log)
    await first.send(*NODES, *PODS)
    await first.informer.stop()
    store = first.store
    store.flush()
    if crashed_after is not None:
        with pytest.raises(_Crash):
            await rebuild.ensure_live(store.client(), _Truncated(log, crashed_after), _projected)
    assert await store.epoch() == left

    chunks: list[int] = []
    real_restore = MemoryStore.restore

    async def restore(
        self: MemoryStore, entries: list[object], *, final: bool, base: int | None = None
    ) -> None:
        chunks.append(len(entries))
        await real_restore(self, entries, final=final, base=base)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryStore, "restore", restore)
    second = await open_cluster(log, store)
    assert await second.stored() == ALL
    assert chunks == restored  # bounded chunks, the last one makes the store live
    assert (await store.epoch()).state == "live"
    [line] = rebuilds(caplog)
    assert f"{found}): rebuilt {len(restored) * 2} event log entries up to seq 8" in line
    await second.informer.stop()


async def test_a_fresh_cluster_is_not_reported_as_a_loss(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.send(*NODES)
    assert (await cluster.store.epoch()).state == "live"
    assert rebuilds(caplog) == []


class FullDisk:
    """The os layer of the event log: ``full`` refuses every write (ENOSPC) after
    writing half of it."""

    def __init__(self) -> None:
        self.full = False

    def write(self, fd: int, data: memoryview, /) -> int:
        if self.full:
            os.write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data)

    def fsync(self, fd: int, /) -> None:
        os.fsync(fd)

    def ftruncate(self, fd: int, length: int, /) -> None:
        os.ftruncate(fd, length)


async def test_a_full_disk_stops_ingest_until_the_log_is_writable_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "ksched.informer")
    disk = FullDisk()
    path = tmp_path / "events.jsonl"
    log = await FileEventLog.open(path, files=disk)
    cluster = await open_cluster(log)
    await cluster.send(*NODES)
    intact = path.read_bytes()

    disk.full = True
    await cluster.send(*PODS[:2])
    assert not cluster.informer.ready
    assert path.read_bytes() == intact  # nothing half-written
    assert await cluster.stored() == (ALL[0], set())
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        f"event log {path}: appending seq 4..5 failed: No space left on device (nothing of "
        "it was written): ingest stops until the event log is writable again"
    ]
    assert errors[0].exc_info is None  # one line, no traceback
    await cluster.send(PODS[2])  # not consumed while the log refuses
    assert cluster.bus.queue_depth(topology.INFORMER_EVENTS.name) == 3

    def refusals() -> int:
        return sum("still refuses" in r.getMessage() for r in caplog.records)

    await cluster.clock.advance(0.5)
    await tick_until(lambda: refusals() == 1)
    assert not cluster.informer.ready
    disk.full = False
    await cluster.clock.advance(1.0)  # the backoff doubled
    await tick_until(lambda: cluster.informer.ready)
    await cluster.bus.wait_idle()

    assert await cluster.stored() == (ALL[0], {"default/p0", "default/p1", "default/p2"})
    assert [e.seq async for e in log.read()] == [1, 2, 3, 4, 5, 6]  # requeued ones logged once
    assert any("writable again after 1.5 s" in r.getMessage() for r in caplog.records)
    await cluster.informer.stop()
    await cluster.bus.close()
    await log.close()


class _Truncated:
    """The log as a crashed informer had read it: its first ``n`` entries, then the
    process died (the store was left Building)."""

    def __init__(self, log: EventLog, n: int) -> None:
        self._log, self._n = log, n

    def last_seq(self) -> int:
        return self._log.last_seq()

    async def latest_snapshot(self) -> tuple[int, bytes] | None:
        return await self._log.latest_snapshot()

    async def read(self, after: int = 0) -> AsyncIterator[LogEntry]:
        async for event in self._log.read(after):
            if event.seq > self._n:
                raise _Crash
            yield event


class _Crash(Exception):
    pass
