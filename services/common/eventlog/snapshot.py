"""What a snapshot of the projection holds, and how to read a log from one.

A snapshot at seq S stands for the log's entries 1..S: replaying it rebuilds the store
and every projection exactly as replaying those entries would. It holds one synthetic
``ADDED`` entry per object live at S (its whole object, as the log last wrote it),
numbered consecutively so that the last one is S: ``S-K+1 .. S`` for K objects (K ≤ S,
since each live object was last written by an entry of its own). So a store restored
from it is at seq S and the log's entry S+1 continues it, and a rebuild interrupted
halfway through it continues from the seq it reached. The numbers are positions, not
the seqs of the entries that wrote the objects. Nodes come first and pods last, so a
bound pod's node is known when the pod is applied (as in the log).

The body (bytes; each log backend keeps it as it is)::

    {"snapshot": S, "objects": K}      one header line
    {"kind": "node", "seq": S-K+1, "type": "ADDED", "object": {...}}
    ...                                K entry lines, the log's own line format

The store keeps nothing per entry besides its seq and what the object implies (node
allocatable, a pod's charge, a claim's devices: all recomputed from the object), so
these entries restore it whole. What a snapshot cannot say is who made an object
(``origin``) or when: its entries are ``user`` entries, and ``ksched replay`` reproduces
the decisions of the log's tail, after the snapshot, not those before it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

import msgspec

from contracts.events import LogEntry
from contracts.kinds import KINDS
from services.common.eventlog.base import EventLog, LogMismatchError

KIND_ORDER: tuple[str, ...] = (*(kind for kind in KINDS if kind != "pod"), "pod")
"""The order of kinds in a snapshot: pods last (their nodes and claims come before)."""

_decoder = msgspec.json.Decoder(LogEntry)


class _Header(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    snapshot: int
    objects: int


_header = msgspec.json.Decoder(_Header)


class SnapshotError(ValueError):
    """A snapshot that cannot be read: its one-line message names it and what is wrong."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    seq: int
    """The log seq it stands for: the log continues at ``seq + 1``."""
    entries: list[LogEntry]
    """One ADDED entry per live object, numbered ``seq - len(entries) + 1 .. seq``."""


def encode(seq: int, objects: Iterable[tuple[str, bytes]]) -> bytes:
    """The body of a snapshot at ``seq`` of ``objects`` (kind, the object's JSON), given
    in :data:`KIND_ORDER`."""
    items = list(objects)
    if len(items) > seq:
        raise ValueError(f"a snapshot at seq {seq} cannot hold {len(items)} objects")
    first = seq - len(items) + 1
    lines = [b'{"snapshot":%d,"objects":%d}\n' % (seq, len(items))]
    for position, (kind, body) in enumerate(items, start=first):
        lines.append(
            b'{"kind":"%s","seq":%d,"type":"ADDED","object":%s}\n' % (kind.encode(), position, body)
        )
    return b"".join(lines)


def decode(seq: int, body: bytes, source: str) -> Snapshot:
    """The snapshot the log keeps at ``seq``; SnapshotError naming ``source`` (its file,
    or where the log keeps it) when it is corrupt."""
    header_line, _, rest = body.partition(b"\n")
    try:
        header = _header.decode(header_line)
    except msgspec.DecodeError as error:
        raise SnapshotError(f"{source}: not a snapshot: its header {error}") from error
    if header.snapshot != seq:
        raise SnapshotError(f"{source}: holds the snapshot at seq {header.snapshot}, not {seq}")
    entries: list[LogEntry] = []
    for number, line in enumerate(rest.splitlines(), start=2):
        if not line.strip():
            continue
        try:
            entries.append(_decoder.decode(line))
        except msgspec.DecodeError as error:
            raise SnapshotError(f"{source}:{number}: corrupt entry: {error}") from error
        expected = seq - header.objects + len(entries)
        if entries[-1].seq != expected or entries[-1].type != "ADDED":
            raise SnapshotError(
                f"{source}:{number}: entry {entries[-1].seq} {entries[-1].type} where "
                f"ADDED {expected} belongs"
            )
    if len(entries) != header.objects:
        raise SnapshotError(
            f"{source}: holds {len(entries)} objects, its header says {header.objects} (cut short?)"
        )
    return Snapshot(seq, entries)


def where(log: EventLog, seq: int) -> str:
    """How a message names the snapshot at ``seq`` of ``log``: its file if it has one."""
    directory = getattr(log, "snapshots", None)
    if directory is not None:
        return f"snapshot {directory}/{seq}.snap"
    return f"the event log's snapshot at seq {seq}"


async def newest(log: EventLog) -> Snapshot | None:
    """The newest snapshot of ``log``, decoded (SnapshotError if it is corrupt)."""
    found = await log.latest_snapshot()
    if found is None:
        return None
    seq, body = found
    return decode(seq, body, where(log, seq))


async def read_tail(
    log: EventLog, after: int, name: str, *, need: int | None = None
) -> AsyncIterator[LogEntry]:
    """``log.read(after)``, refusing (LogMismatchError) a log that no longer holds
    entry ``need`` (default ``after + 1``) when it ends at or past it: retention dropped
    it, and only a snapshot can stand for it. ``name``: the log in the message."""
    need = after + 1 if need is None else need
    first: int | None = None
    async for entry in log.read(after):
        if first is None:
            first = entry.seq
            if first > need:
                break
        yield entry
    last = log.last_seq()
    if (first is None or first > need) and last >= need:
        held = f"starts at seq {first}" if first else f"ends at seq {last} but holds none"
        raise LogMismatchError(
            f"{name} {held}: the entries from seq {need} on were dropped by retention and "
            "no snapshot in use covers them; empty the store to rebuild it from the "
            "newest snapshot"
        )


async def read_from_snapshot(log: EventLog, name: str) -> tuple[Snapshot | None, list[LogEntry]]:
    """The newest snapshot (None: there is none) and every entry after it: what a
    replay reads. Raises LogMismatchError if the log does not continue it."""
    snapshot = await newest(log)
    after = snapshot.seq if snapshot is not None else 0
    return snapshot, [entry async for entry in read_tail(log, after, name)]
