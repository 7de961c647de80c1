"""The EventLog contract against MemoryEventLog, FileEventLog and StreamEventLog (real
RabbitMQ), then file recovery. The stream's own tests are in test_eventlog_stream.py."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import msgspec
import pytest

from contracts.events import LogEntry
from services.common.eventlog import (
    EventLog,
    FileEventLog,
    LogFencedError,
    LogSequenceError,
    LogWriteError,
    MemoryEventLog,
    open_event_log,
)
from tests.contract.eventlog_support import event, events
from tests.contract.stream_support import StreamLogs


async def entries(stream: AsyncIterator[LogEntry]) -> list[LogEntry]:
    return [e async for e in stream]


async def seqs(stream: AsyncIterator[LogEntry]) -> list[int]:
    return [e.seq for e in await entries(stream)]


@pytest.fixture(params=["memory", "file", pytest.param("stream", marks=pytest.mark.integration)])
async def log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventLog]:
    opened: EventLog
    streams = StreamLogs()
    if request.param == "memory":
        opened = MemoryEventLog()
    elif request.param == "file":
        opened = await FileEventLog.open(tmp_path / "events.jsonl")
    else:
        opened = streams.open()
    await opened.connect()
    yield opened
    await opened.close()
    if request.param == "stream":
        await streams.aclose()


@pytest.fixture(params=["memory", "file"])
async def trimmed_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventLog]:
    """A log whose retain() drops entries (a stream's medium retains by itself)."""
    opened: EventLog
    if request.param == "memory":
        opened = MemoryEventLog()
    else:
        opened = await FileEventLog.open(tmp_path / "events.jsonl")
    yield opened
    await opened.close()


async def test_empty_log(log: EventLog) -> None:
    assert log.last_seq() == 0
    assert await entries(log.read()) == []


async def test_append_and_read(log: EventLog) -> None:
    await log.append(events(1, 3))
    await log.append(events(4, 5))
    await log.append([])
    assert log.last_seq() == 5
    assert await entries(log.read()) == events(1, 5)
    assert await entries(log.read(after=3)) == events(4, 5)
    assert await entries(log.read(after=5)) == []
    assert await entries(log.read(after=99)) == []


async def test_gaps_and_repeats_are_refused_whole(log: EventLog) -> None:
    with pytest.raises(LogSequenceError):
        await log.append([event(2)])
    await log.append([event(1)])
    for bad in ([event(1)], [event(3)], [event(2), event(4)], [event(2), event(2)]):
        with pytest.raises(LogSequenceError):
            await log.append(bad)
    assert log.last_seq() == 1
    assert await seqs(log.read()) == [1]


async def test_read_streams_in_order_from_anywhere(log: EventLog) -> None:
    for first in range(1, 3001, 500):
        await log.append(events(first, first + 499))
    for after in (0, 1, 1023, 1024, 1025, 2048, 2049, 2999):
        stream = log.read(after)
        assert (await anext(stream)).seq == after + 1
        assert await seqs(stream) == list(range(after + 2, 3001))


async def test_read_sees_what_was_appended_before_the_call(log: EventLog) -> None:
    await log.append(events(1, 2))
    stream = log.read()
    await log.append(events(3, 4))
    assert await seqs(stream) == [1, 2]
    assert await seqs(log.read(1)) == [2, 3, 4]


async def test_reopen_keeps_the_log(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = FileEventLog(path)
    await log.append(events(1, 3))
    await log.close()
    reopened = FileEventLog(path)
    assert reopened.last_seq() == 3
    assert await entries(reopened.read()) == events(1, 3)
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
    assert await entries(log.read()) == events(1, 4)
    await log.close()


async def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(msgspec.json.encode(event(1)) + b"\n\n" + msgspec.json.encode(event(2)))
    log = FileEventLog(path)
    assert log.last_seq() == 2
    await log.append([event(3)])
    assert await seqs(log.read()) == [1, 2, 3]
    assert await seqs(log.read(1)) == [2, 3]
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
    assert await seqs(log.read()) == [1, 2, 3]
    await log.close()


async def test_open_event_log_picks_the_backend(tmp_path: Path) -> None:
    memory = open_event_log("memory://")
    assert isinstance(memory, MemoryEventLog)
    on_disk = open_event_log(str(tmp_path / "log.jsonl"))
    assert isinstance(on_disk, FileEventLog)
    await on_disk.close()
    await memory.close()


class FailingFiles:
    """The os layer of a FileEventLog with faults injected: ``fail`` is the operation
    that raises next (``write`` after writing ``partial`` bytes, ``fsync``), with
    ``code``; ``truncate_fails`` makes cutting the partial line fail too."""

    def __init__(self) -> None:
        self.fail: str | None = None
        self.code = errno.ENOSPC
        self.partial = 0
        self.truncate_fails = False

    def write(self, fd: int, data: memoryview, /) -> int:
        if self.fail == "write":
            os.write(fd, data[: self.partial])
            raise OSError(self.code, os.strerror(self.code))
        return os.write(fd, data)

    def fsync(self, fd: int, /) -> None:
        if self.fail == "fsync":
            raise OSError(self.code, os.strerror(self.code))
        os.fsync(fd)

    def ftruncate(self, fd: int, length: int, /) -> None:
        if self.truncate_fails:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        os.ftruncate(fd, length)


@pytest.mark.parametrize(
    ("fail", "code", "partial", "cause"),
    [
        ("write", errno.ENOSPC, 0, "No space left on device"),
        ("write", errno.ENOSPC, 57, "No space left on device"),
        ("fsync", errno.EIO, 0, "Input/output error"),
    ],
    ids=["disk-full-before-a-byte", "disk-full-mid-line", "fsync-failed"],
)
@pytest.mark.parametrize("truncate_fails", [False, True], ids=["cut-now", "cut-next-append"])
async def test_a_failed_append_raises_one_line_and_leaves_nothing_half_written(
    tmp_path: Path, fail: str, code: int, partial: int, cause: str, truncate_fails: bool
) -> None:
    path = tmp_path / "events.jsonl"
    files = FailingFiles()
    log = await FileEventLog.open(path, files=files)
    await log.append(events(1, 2))
    intact = path.read_bytes()

    files.fail, files.code, files.partial = fail, code, partial
    files.truncate_fails = truncate_fails
    with pytest.raises(LogWriteError) as raised:
        await log.append(events(3, 5))
    message = str(raised.value)
    assert raised.value.errno == code
    assert "\n" not in message
    assert f"event log {path}: appending seq 3..5 failed: {cause}" in message
    assert log.last_seq() == 2
    assert await entries(log.read()) == events(1, 2)
    if not truncate_fails:
        assert path.read_bytes() == intact

    files.fail, files.truncate_fails = None, False  # the disk has room again
    await log.append(events(3, 5))
    assert await entries(log.read()) == events(1, 5)
    await log.close()
    reopened = FileEventLog(path)
    assert await entries(reopened.read()) == events(1, 5)
    await reopened.close()


async def test_a_partial_line_left_by_a_failed_append_is_cut_on_open(tmp_path: Path) -> None:
    """The process died before it could append again: the next open repairs the tail."""
    path = tmp_path / "events.jsonl"
    files = FailingFiles()
    log = await FileEventLog.open(path, files=files)
    await log.append(events(1, 2))
    intact = path.read_bytes()
    files.fail, files.partial, files.truncate_fails = "write", 40, True
    with pytest.raises(LogWriteError):
        await log.append(events(3, 3))
    await log.close()
    assert path.read_bytes() != intact

    reopened = FileEventLog(path)
    assert (reopened.last_seq(), path.read_bytes()) == (2, intact)
    await reopened.close()


async def test_a_claim_by_a_lower_token_is_refused(log: EventLog) -> None:
    await log.claim(5)
    await log.append(events(1, 2))
    with pytest.raises(LogFencedError):
        await log.claim(4)
    await log.claim(5)  # the same holder again, after a restart
    await log.append(events(3, 3))
    assert await seqs(log.read()) == [1, 2, 3]


async def test_a_second_writer_on_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    first, second = FileEventLog(path), FileEventLog(path)
    await first.append(events(1, 2))
    with pytest.raises(LogFencedError, match="another writer appended"):
        await second.append(events(1, 1))  # its view of the file is stale
    await first.append(events(3, 3))
    await first.close()
    await second.close()
    reopened = FileEventLog(path)
    assert await seqs(reopened.read()) == [1, 2, 3]
    await reopened.close()


async def test_a_deposed_writer_is_fenced_off_by_its_successor(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    leader = FileEventLog(path)
    await leader.claim(1)
    successor = FileEventLog(path)  # a standby, opened while the leader still wrote
    await leader.append(events(1, 2))
    await successor.claim(2)  # the leader's lease expired: the standby took over
    assert successor.last_seq() == 2  # it read what the leader appended after its open
    with pytest.raises(LogFencedError, match="superseded by 2"):
        await leader.append(events(3, 3))  # the deposed leader woke up
    await successor.append(events(3, 4))
    with pytest.raises(LogFencedError):
        await leader.claim(1)
    for opened in (leader, successor):
        await opened.close()
    reopened = FileEventLog(path)
    assert await entries(reopened.read()) == events(1, 4)
    await reopened.close()


async def test_a_claim_cuts_the_tail_a_dead_writer_tore(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    leader, successor = FileEventLog(path), FileEventLog(path)
    await leader.append(events(1, 2))
    with path.open("ab") as f:
        f.write(msgspec.json.encode(event(3))[:10])  # the leader died mid-append
    await leader.close()
    await successor.claim(1)
    await successor.append(events(3, 3))
    assert await entries(successor.read()) == events(1, 3)
    await successor.close()


# -- snapshots and retention ----------------------------------------------------------


async def test_the_newest_snapshot_is_kept(log: EventLog) -> None:
    assert await log.latest_snapshot() is None
    await log.append(events(1, 10))
    await log.write_snapshot(4, b"at 4")
    await log.write_snapshot(8, b"at 8")
    assert await log.latest_snapshot() == (8, b"at 8")
    await log.write_snapshot(8, b"again")  # the same seq again replaces it
    assert await log.latest_snapshot() == (8, b"again")


@pytest.mark.parametrize("seq", [0, 11], ids=["before-the-first", "past-the-end"])
async def test_a_snapshot_of_an_entry_the_log_never_had_is_refused(log: EventLog, seq: int) -> None:
    await log.append(events(1, 10))
    with pytest.raises(ValueError, match=f"no snapshot at seq {seq}"):
        await log.write_snapshot(seq, b"x")
    assert await log.latest_snapshot() is None


async def test_retain_drops_only_what_a_snapshot_covers(trimmed_log: EventLog) -> None:
    log = trimmed_log
    await log.append(events(1, 10))
    with pytest.raises(ValueError, match="newest snapshot covers seq 0"):
        await log.retain(3)
    await log.write_snapshot(6, b"at 6")
    with pytest.raises(ValueError, match="newest snapshot covers seq 6"):
        await log.retain(7)
    await log.retain(4)  # a window of 2 entries before the snapshot
    assert await entries(log.read()) == events(5, 10)
    assert await entries(log.read(after=2)) == events(5, 10)
    assert await entries(log.read(after=7)) == events(8, 10)
    await log.retain(2)  # already dropped: nothing changes
    assert log.last_seq() == 10
    await log.append(events(11, 12))
    await log.retain(6)
    assert await entries(log.read()) == events(7, 12)


async def test_a_log_emptied_by_retention_ends_at_its_snapshot(trimmed_log: EventLog) -> None:
    log = trimmed_log
    await log.append(events(1, 5))
    await log.write_snapshot(5, b"at 5")
    await log.retain(5)
    assert log.last_seq() == 5
    assert await entries(log.read()) == []
    with pytest.raises(LogSequenceError):
        await log.append([event(1)])
    await log.append(events(6, 7))
    assert await entries(log.read()) == events(6, 7)


async def test_a_long_log_reads_from_anywhere_after_retention(trimmed_log: EventLog) -> None:
    """Past the file's sparse index (one offset every 1024 entries)."""
    log = trimmed_log
    await log.append(events(1, 3000))
    await log.write_snapshot(2500, b"s")
    await log.retain(1500)
    assert await seqs(log.read()) == list(range(1501, 3001))
    assert await seqs(log.read(after=2049)) == list(range(2050, 3001))
    await log.append(events(3001, 3100))
    assert await seqs(log.read(after=3050)) == list(range(3051, 3101))


@pytest.mark.parametrize("emptied", [False, True], ids=["trimmed", "emptied"])
async def test_a_retained_file_log_reopens(tmp_path: Path, emptied: bool) -> None:
    path = tmp_path / "events.jsonl"
    first = FileEventLog(path)
    await first.append(events(1, 9))
    await first.write_snapshot(9 if emptied else 6, b"snap")
    await first.retain(9 if emptied else 4)
    await first.close()

    reopened = FileEventLog(path)
    assert reopened.last_seq() == 9
    assert await entries(reopened.read()) == ([] if emptied else events(5, 9))
    assert await reopened.latest_snapshot() == ((9 if emptied else 6), b"snap")
    await reopened.append(events(10, 10))
    assert await seqs(reopened.read(after=8)) == ([10] if emptied else [9, 10])
    await reopened.close()
    assert sorted(os.listdir(tmp_path)) == [
        "events.jsonl",
        "events.jsonl.lock",
        "events.jsonl.snapshots",
    ]


async def test_snapshot_files_are_written_whole_and_the_oldest_dropped(tmp_path: Path) -> None:
    log = FileEventLog(tmp_path / "events.jsonl")
    await log.append(events(1, 9))
    for seq in (3, 5, 7):
        await log.write_snapshot(seq, b"at %d" % seq)
    directory = tmp_path / "events.jsonl.snapshots"
    (directory / "9.snap.tmp").write_bytes(b"torn")  # a crash mid-write leaves this
    assert sorted(os.listdir(directory)) == ["5.snap", "7.snap", "9.snap.tmp"]
    assert await log.latest_snapshot() == (7, b"at 7")
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    assert oct((directory / "7.snap").stat().st_mode & 0o777) == "0o600"
    await log.close()


async def test_a_read_begun_before_retention_still_reads_what_it_was_given(
    tmp_path: Path,
) -> None:
    log = FileEventLog(tmp_path / "events.jsonl")
    await log.append(events(1, 10))
    await log.write_snapshot(8, b"s")
    pending = log.read(after=6)  # not iterated yet: it opens the file on its first step
    await log.retain(5)
    assert await seqs(pending) == [7, 8, 9, 10]
    await log.close()


async def test_a_writer_whose_file_another_one_replaced_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    leader = FileEventLog(path)
    stale = FileEventLog(path)  # opened before the leader's retention replaced the file
    await leader.append(events(1, 6))
    await leader.write_snapshot(6, b"s")
    await leader.retain(3)
    with pytest.raises(LogFencedError, match="another writer replaced the file"):
        await stale.append(events(1, 1))
    await stale.claim(1)  # it becomes the writer: it reads the log anew
    assert stale.last_seq() == 6
    await stale.append(events(7, 7))
    assert await seqs(stale.read()) == [4, 5, 6, 7]
    for opened in (leader, stale):
        await opened.close()


async def test_appends_go_on_while_retention_copies_and_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FileEventLog(tmp_path / "events.jsonl")
    await log.append(events(1, 10))
    await log.write_snapshot(6, b"s")
    copied, resume = threading.Event(), threading.Event()
    real = FileEventLog._copy

    def copy(self: FileEventLog, *args: Any) -> None:
        real(self, *args)
        copied.set()
        resume.wait(10)

    monkeypatch.setattr(FileEventLog, "_copy", copy)
    retaining = asyncio.create_task(log.retain(4))
    assert await anyio.to_thread.run_sync(copied.wait, 10)
    await log.append(events(11, 12))  # the bulk copy holds no lock
    resume.set()
    await retaining
    assert await entries(log.read()) == events(5, 12)
    await log.append(events(13, 13))
    await log.close()
    reopened = FileEventLog(log.path)
    assert await entries(reopened.read()) == events(5, 13)
    assert not [name for name in os.listdir(tmp_path) if ".retain" in name]
    await reopened.close()


async def test_a_stale_writer_cannot_drop_entries(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    leader = FileEventLog(path)
    await leader.append(events(1, 6))
    stale = FileEventLog(path)  # its view ends at 6
    await leader.append(events(7, 8))
    await leader.write_snapshot(8, b"s")
    with pytest.raises(LogFencedError, match="another writer appended"):
        await stale.retain(5)
    assert await entries(leader.read()) == events(1, 8)
    for opened in (leader, stale):
        await opened.close()
