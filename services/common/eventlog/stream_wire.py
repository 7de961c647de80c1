"""What a stream event log's messages say, and which entries count (no I/O here).

Three streams per log ``NAME`` (``namespace.`` prefixed like every queue):

- ``NAME``: the entries, in batches of consecutive seqs, one message per batch of up to
  :data:`BATCH` (body: the LogEntries' JSON, one per line as in a file log; headers: the
  first and last seq, the writer's fencing token and the writer's id; one message per
  entry capped reading at ~2,500 entries/s, the per-message cost of AMQP), and markers:
  a *fence* marker (a writer claiming the log) and *end* markers (a reader finding where
  the stream ends: it publishes one and reads until it arrives).
- ``NAME.fences``: the claims, in order: ``(fence, writer, from_offset)``. An entry at
  offset ``o`` counts only if it was written by the owner at ``o``: the claim with the
  highest token among those whose ``from`` is below ``o`` (a later claim with the same
  token wins: the same lease holder restarted). So a reader starting anywhere knows which
  writer owned that point without reading from the start, and a deposed writer's
  appends after its successor's claim never count, whatever their seqs.
- ``NAME.snapshots``: snapshots of the projection (body: the snapshot; headers: seq,
  writer, fence and the offset of entry ``seq``).

Among the entries that count, a seq seen before (an append retried after its confirm was
lost) is skipped; the next one must follow the last (:class:`Reading`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import msgspec

from contracts.events import LogEntry
from services.common.eventlog.base import LogSequenceError
from services.common.eventlog.encoded import entry_lines

KIND: Final = "ksched-kind"
SEQ: Final = "ksched-seq"
LAST: Final = "ksched-last"
BATCH: Final = 256
"""Entries per message at most (an append of more is several messages, in order)."""
FENCE: Final = "ksched-fence"
WRITER: Final = "ksched-writer"
MARK_ID: Final = "ksched-id"
ENTRY_OFFSET: Final = "ksched-offset"
OFFSET: Final = "x-stream-offset"
"""The header RabbitMQ sets on every message a stream delivers: its offset."""

ENTRY, FENCE_MARK, END_MARK, SNAPSHOT = "entry", "fence", "end", "snapshot"


@dataclass(frozen=True, slots=True)
class Record:
    """One message read from a stream."""

    offset: int
    kind: str
    seq: int = 0
    last: int = 0
    """An entry batch's last seq (``seq`` is its first)."""
    fence: int = 0
    writer: str = ""
    mark: str = ""
    entry_offset: int = -1
    body: bytes = b""


def record(offset: int, headers: Mapping[str, object], body: bytes) -> Record:
    """The Record of a delivered message (``headers``: its AMQP headers)."""

    def number(name: str, default: int = 0) -> int:
        value = headers.get(name, default)
        return value if isinstance(value, int) else default

    def text(name: str) -> str:
        value = headers.get(name, "")
        return value.decode() if isinstance(value, bytes) else str(value)

    return Record(
        offset=offset,
        kind=text(KIND),
        seq=number(SEQ),
        last=number(LAST, number(SEQ)),
        fence=number(FENCE),
        writer=text(WRITER),
        mark=text(MARK_ID),
        entry_offset=number(ENTRY_OFFSET, -1),
        body=body,
    )


def batches(
    events: Sequence[LogEntry], fence: int, writer: str, lines: Sequence[bytes] | None = None
) -> list[tuple[bytes, dict[str, object]]]:
    """The messages (body, headers) that carry ``events`` (consecutive seqs); ``lines``:
    their JSON, if encoded already."""
    encoded = lines or entry_lines(events)
    messages: list[tuple[bytes, dict[str, object]]] = []
    for start in range(0, len(events), BATCH):
        chunk = events[start : start + BATCH]
        body = b"\n".join(encoded[start : start + BATCH])
        first, last = chunk[0].seq, chunk[-1].seq
        messages.append((body, {KIND: ENTRY, SEQ: first, LAST: last, FENCE: fence, WRITER: writer}))
    return messages


def entries(r: Record, after: int) -> list[LogEntry]:
    """The entries of batch ``r`` with seq > ``after``."""
    return [e for e in _DECODER.decode_lines(r.body) if e.seq > after]


_DECODER = msgspec.json.Decoder(LogEntry)


CLAIM = "claim"


def mark_headers(kind: str, mark: str, fence: int = 0, writer: str = "") -> dict[str, object]:
    return {KIND: kind, MARK_ID: mark, FENCE: fence, WRITER: writer}


class Claim(msgspec.Struct, frozen=True):
    """One message of ``NAME.fences``: ``writer`` holds token ``fence`` from ``start``."""

    fence: int
    writer: str
    start: int


@dataclass(slots=True)
class Owners:
    """The claims of one log, in the order they were made."""

    claims: list[Claim] = field(default_factory=list)

    def owner_at(self, offset: int) -> Claim | None:
        """The claim in force at ``offset``: the highest token among the claims made
        before it (the later of equal tokens); None before the first claim."""
        best: Claim | None = None
        for claim in self.claims:
            if claim.start < offset and (best is None or claim.fence >= best.fence):
                best = claim
        return best

    def counts(self, r: Record) -> bool:
        """Whether entry ``r`` was written by the owner at its offset."""
        owner = self.owner_at(r.offset)
        return owner is not None and (owner.fence, owner.writer) == (r.fence, r.writer)

    def highest(self) -> int:
        return max((c.fence for c in self.claims), default=0)


@dataclass(slots=True)
class Reading:
    """Which entries a reader yields, from some point of the stream on: those that count
    (:meth:`Owners.counts`), once per seq, consecutive after ``last``."""

    owners: Owners
    last: int
    name: str
    started: bool = False
    """False until the first entry, which may follow a gap: retention dropped the
    entries before it (a snapshot covers them; the reader finds the trimmed head by the
    first seq it reads, as on every log)."""

    def accept(self, r: Record) -> bool:
        """Whether batch ``r`` holds entries to yield (those after the :attr:`last` it
        had; it becomes ``r.last``); raises LogSequenceError on a gap."""
        if r.kind != ENTRY or not self.owners.counts(r) or r.last <= self.last:
            return False
        if r.seq > self.last + 1 and self.started:
            where = f"event log {self.name} (offset {r.offset})"
            raise LogSequenceError(f"{where}: seq {r.seq} follows {self.last}")
        self.started = True
        self.last = r.last
        return True
