"""What a snapshot holds (one ADDED entry per live object, numbered to end at its seq),
its one-line errors, and reading a log that retention trimmed."""

from __future__ import annotations

import msgspec
import pytest

from contracts.events import NodeEntry, PodEntry
from services.common.eventlog import LogMismatchError, MemoryEventLog
from services.common.eventlog.snapshot import (
    KIND_ORDER,
    SnapshotError,
    decode,
    encode,
    read_from_snapshot,
    read_tail,
)
from tests.builders import make_node, make_pod

NODE = make_node("n1")
POD = make_pod("web", uid="uid-web", node_name="n1")
OBJECTS = [("node", msgspec.json.encode(NODE)), ("pod", msgspec.json.encode(POD))]


def test_a_snapshot_round_trips_as_entries_numbered_to_end_at_its_seq() -> None:
    snapshot = decode(9, encode(9, OBJECTS), "snap")
    assert snapshot.seq == 9
    assert snapshot.entries == [
        NodeEntry(seq=8, type="ADDED", object=NODE),
        PodEntry(seq=9, type="ADDED", object=POD),
    ]
    assert decode(3, encode(3, []), "snap").entries == []
    assert KIND_ORDER[-1] == "pod" and KIND_ORDER[0] == "node"


def test_more_objects_than_entries_is_refused() -> None:
    with pytest.raises(ValueError, match="a snapshot at seq 1 cannot hold 2 objects"):
        encode(1, OBJECTS)


GOOD = encode(9, OBJECTS)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"garbage\n", "snap: not a snapshot: its header"),
        (
            GOOD.replace(b'"snapshot":9', b'"snapshot":8'),
            "snap: holds the snapshot at seq 8, not 9",
        ),
        (GOOD.rsplit(b"\n", 2)[0] + b"\n", "snap: holds 1 objects, its header says 2 (cut short?)"),
        (GOOD.replace(b'"seq":9', b'"seq":7'), "snap:3: entry 7 ADDED where ADDED 9 belongs"),
        (GOOD.replace(b'"kind":"pod"', b'"kind":"nope"'), "snap:3: corrupt entry:"),
    ],
    ids=["header", "other-seq", "cut-short", "misnumbered", "corrupt-entry"],
)
def test_a_corrupt_snapshot_is_one_line_naming_it(body: bytes, message: str) -> None:
    with pytest.raises(SnapshotError) as raised:
        decode(9, body, "snap")
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


async def test_a_replay_reads_the_newest_snapshot_and_the_tail() -> None:
    log = MemoryEventLog()
    await log.append([NodeEntry(seq=s, type="ADDED", object=make_node(f"n{s}")) for s in (1, 2, 3)])
    assert await read_from_snapshot(log, "log") == (None, await _all(log))
    await log.write_snapshot(2, encode(2, OBJECTS[:1]))
    await log.retain(2)
    snapshot, tail = await read_from_snapshot(log, "log")
    assert snapshot is not None and snapshot.seq == 2 and len(snapshot.entries) == 1
    assert [e.seq for e in tail] == [3]


@pytest.mark.parametrize(
    ("appended", "message"),
    [
        (4, "log starts at seq 4: the entries from seq 2 on"),
        (3, "log ends at seq 3 but holds none"),
    ],
    ids=["trimmed", "emptied"],
)
async def test_reading_past_what_retention_dropped_is_refused(appended: int, message: str) -> None:
    log = MemoryEventLog()
    await log.append([NodeEntry(seq=s, type="ADDED", object=make_node(f"n{s}")) for s in (1, 2, 3)])
    await log.write_snapshot(3, encode(3, []))
    await log.retain(3)
    if appended == 4:
        await log.append([NodeEntry(seq=4, type="ADDED", object=make_node("n4"))])
    with pytest.raises(LogMismatchError, match=message):
        [e async for e in read_tail(log, 1, "log")]
    assert [e.seq async for e in read_tail(log, 3, "log")] == ([4] if appended == 4 else [])
    # A republish may start before what is held, as long as what is needed is there.
    assert [e.seq async for e in read_tail(log, 0, "log", need=4)] == ([4] if appended == 4 else [])


async def _all(log: MemoryEventLog) -> list[object]:
    return [e async for e in log.read()]
