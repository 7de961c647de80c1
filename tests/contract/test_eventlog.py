"""The EventLog contract against MemoryEventLog and FileEventLog, then file recovery."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import msgspec
import pytest

from contracts.events import ClusterEvent, NodeEvent, PodEvent
from contracts.k8s import Node, ObjectMeta, Pod
from services.common.eventlog import (
    EventLog,
    FileEventLog,
    LogSequenceError,
    MemoryEventLog,
    open_event_log,
)


def event(seq: int) -> ClusterEvent:
    """Alternating node and pod events, so both union members round-trip."""
    if seq % 2:
        return NodeEvent(seq=seq, type="ADDED", object=Node(metadata=ObjectMeta(name=f"n{seq}")))
    meta = ObjectMeta(name=f"p{seq}", namespace="default", uid=f"uid-{seq}")
    return PodEvent(seq=seq, type="MODIFIED", at=float(seq), object=Pod(metadata=meta))


def events(first: int, last: int) -> list[ClusterEvent]:
    return [event(seq) for seq in range(first, last + 1)]


def seqs(entries: Iterator[ClusterEvent]) -> list[int]:
    return [e.seq for e in entries]


@pytest.fixture(params=["memory", "file"])
async def log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventLog]:
    opened: EventLog
    if request.param == "memory":
        opened = MemoryEventLog()
    else:
        opened = await FileEventLog.open(tmp_path / "events.jsonl")
    yield opened
    await opened.close()


async def test_empty_log(log: EventLog) -> None:
    assert log.last_seq() == 0
    assert list(log.read()) == []


async def test_append_and_read(log: EventLog) -> None:
    await log.append(events(1, 3))
    await log.append(events(4, 5))
    await log.append([])
    assert log.last_seq() == 5
    assert list(log.read()) == events(1, 5)
    assert list(log.read(after=3)) == events(4, 5)
    assert list(log.read(after=5)) == []
    assert list(log.read(after=99)) == []


async def test_gaps_and_repeats_are_refused_whole(log: EventLog) -> None:
    with pytest.raises(LogSequenceError):
        await log.append([event(2)])
    await log.append([event(1)])
    for bad in ([event(1)], [event(3)], [event(2), event(4)], [event(2), event(2)]):
        with pytest.raises(LogSequenceError):
            await log.append(bad)
    assert log.last_seq() == 1
    assert seqs(log.read()) == [1]


async def test_read_streams_in_order_from_anywhere(log: EventLog) -> None:
    for first in range(1, 3001, 500):
        await log.append(events(first, first + 499))
    for after in (0, 1, 1023, 1024, 1025, 2048, 2049, 2999):
        stream = log.read(after)
        assert next(stream).seq == after + 1
        assert seqs(stream) == list(range(after + 2, 3001))


async def test_read_sees_what_was_appended_before_the_call(log: EventLog) -> None:
    await log.append(events(1, 2))
    stream = log.read()
    await log.append(events(3, 4))
    assert seqs(stream) == [1, 2]
    assert seqs(log.read(1)) == [2, 3, 4]


async def test_reopen_keeps_the_log(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = FileEventLog(path)
    await log.append(events(1, 3))
    await log.close()
    reopened = FileEventLog(path)
    assert reopened.last_seq() == 3
    assert list(reopened.read()) == events(1, 3)
    await reopened.append(events(4, 4))
    with pytest.raises(LogSequenceError):
        await reopened.append(events(4, 4))
    await reopened.close()
    assert len(path.read_bytes().splitlines()) == 4


async def test_torn_last_line_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = FileEventLog(path)
    await log.append(events(1, 2))
    await log.close()
    intact = path.read_bytes()
    torn = msgspec.json.encode(event(3))[:-7]
    path.write_bytes(intact + torn)

    log = FileEventLog(path)
    assert log.last_seq() == 2
    assert path.read_bytes() == intact
    await log.append(events(3, 4))
    assert list(log.read()) == events(1, 4)
    await log.close()


async def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(msgspec.json.encode(event(1)) + b"\n\n" + msgspec.json.encode(event(2)))
    log = FileEventLog(path)
    assert log.last_seq() == 2
    await log.append([event(3)])
    assert seqs(log.read()) == [1, 2, 3]
    assert seqs(log.read(1)) == [2, 3]
    await log.close()


async def test_corruption_before_the_end_refuses_to_open(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    good = msgspec.json.encode(event(1)) + b"\n"
    path.write_bytes(good + b"{not json\n" + msgspec.json.encode(event(2)) + b"\n")
    with pytest.raises(ValueError, match=r"events.jsonl:2: corrupt entry"):
        FileEventLog(path)
    path.write_bytes(good + msgspec.json.encode(event(3)) + b"\n")
    with pytest.raises(LogSequenceError):
        FileEventLog(path)


async def test_failed_append_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    log = FileEventLog(path)
    await log.append(events(1, 1))
    size = path.stat().st_size

    def broken_fsync(fd: int) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", broken_fsync)
        with pytest.raises(OSError, match="disk full"):
            await log.append(events(2, 3))
    assert (path.stat().st_size, log.last_seq()) == (size, 1)
    await log.append(events(2, 3))
    assert seqs(log.read()) == [1, 2, 3]
    await log.close()


async def test_open_event_log_picks_the_backend(tmp_path: Path) -> None:
    memory = open_event_log("memory://")
    assert isinstance(memory, MemoryEventLog)
    on_disk = open_event_log(str(tmp_path / "log.jsonl"))
    assert isinstance(on_disk, FileEventLog)
    await on_disk.close()
    await memory.close()
