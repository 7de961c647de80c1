"""The event log on a RabbitMQ stream: the production backend, replicated across the
cluster's nodes (``rabbitmq-streams stream_status NAME`` lists its replicas).
``open_event_log("stream://NAME")``.

What goes where is in :mod:`services.common.eventlog.stream_wire`. How it keeps the
EventLog contract on a medium without conditional writes:

- **Durable append**: every entry is published with publisher confirms (a stream
  confirms once a majority of its replicas hold it). A missing confirm (a lost
  connection, a node that died) raises LogWriteError; the entries may or may not be in
  the stream, so the caller retries the same append, and a copy that did land is
  recognised by its seq and skipped on read.
- **Fencing**: :meth:`claim` publishes a fence marker, reads the stream until its own
  marker arrives (so :meth:`last_seq` covers whatever any writer appended before it) and
  records the claim in ``NAME.fences``. Readers count an entry only if the claim in force
  at its offset is its writer's, so a deposed writer's appends after the claim are
  invisible. The writer follows its stream: an append returns once it has read its own
  entries back, and raises LogFencedError if a newer claim's marker came before them.
  A writer that never claimed claims token 0 on its first append: refused once a lease
  holder claimed the log, or if the log grew since the writer looked (a stale view);
  otherwise it takes the log over from an earlier such writer.
- **Reads by offset**: ``read(after)`` finds the first entry after ``after`` by a binary
  search on offsets (a few messages per probe), then streams up to the end as of the
  call: the writer knows it; another reader publishes an end marker and reads up to it.
- **Snapshots** go to ``NAME.snapshots``; the newest valid one is found from its end.
  Retention is the streams' own (``x-max-age``, ``x-max-length-bytes``): :meth:`retain`
  does nothing, and a snapshot must be written more often than retention drops
  segments, or a rebuild finds entries gone (a clear LogSequenceError says so).

Limits: the writer learns of a newer claim from its marker or from its record in
``NAME.fences``, whichever it reads first; an append it read back in the few
milliseconds between a newer claimant's marker (if that marker preceded the writer's own
claim) and that claimant's record is acknowledged yet does not count. Leases make that
two leaders at once: a lease that expired while its holder was claiming. A reader that
is not the writer publishes a small end marker per read (it needs write access).
"""

from __future__ import annotations

import asyncio
import errno
import uuid
from collections.abc import AsyncIterator, Sequence

import msgspec

from contracts.events import LogEntry
from services.common.brokers import broker_urls
from services.common.eventlog._sequence import check_sequence
from services.common.eventlog.base import LogFencedError, LogWriteError
from services.common.eventlog.options import DEFAULT_NAME, StreamOptions
from services.common.eventlog.stream_client import BROKER_ERRORS, StreamClient, describe
from services.common.eventlog.stream_wire import (
    CLAIM,
    END_MARK,
    ENTRY,
    ENTRY_OFFSET,
    FENCE,
    FENCE_MARK,
    KIND,
    SEQ,
    SNAPSHOT,
    WRITER,
    Claim,
    Owners,
    Reading,
    Record,
    batches,
    entries,
    mark_headers,
)

WINDOW = 64
"""Messages read back from an end when looking for the last entry (grows by 4x)."""
PROBE = 8
"""Prefetch of one binary-search probe (it needs one message, sometimes a few)."""
READ_BACK_TIMEOUT = 30.0


class StreamEventLog:
    """EventLog on a RabbitMQ stream. Connects on :meth:`connect` (or the first call
    that needs the broker); :meth:`last_seq` needs it done."""

    def __init__(self, name: str = DEFAULT_NAME, options: StreamOptions | None = None) -> None:
        options = options or StreamOptions()
        self.spec = f"stream://{name}"
        self.name = f"{options.namespace}.{name}" if options.namespace else name
        """The stream on the broker (namespace applied); ``NAME.fences`` and
        ``NAME.snapshots`` beside it."""
        self.fences = f"{self.name}.fences"
        self.snapshots = f"{self.name}.snapshots"
        self._retention: dict[str, int | str] = {}
        if options.max_age:
            self._retention["x-max-age"] = options.max_age
        if options.max_length_bytes:
            self._retention["x-max-length-bytes"] = options.max_length_bytes
        self.client = StreamClient(broker_urls(options.amqp_url), options.tls)
        self._lock = asyncio.Lock()
        self.writer = uuid.uuid4().hex
        """This object's id as a writer (in its entries' and markers' headers)."""
        self._owners = Owners()
        self._connected = False
        self._last_seq = 0
        self._fence: int | None = None
        """The token this writer claimed the log with; None: not (yet) its writer."""
        self._end = -1
        """The writer's: the offset of its last entry (or of its claim's marker)."""
        self._tail: asyncio.Task[None] | None = None
        self._tail_offset = -1
        self._claims_offset = -1
        """The last offset of NAME.fences read (loading the claims, or following them)."""
        self._tail_error: BaseException | None = None
        self._deposed: tuple[int, int] | None = None
        """(offset, token) of the first newer claim's marker the writer read."""
        self._own: dict[int, int] = {}
        """seq → offset of the first copy of each own entry read back, beyond last_seq."""
        self._progress = asyncio.Event()

    @property
    def superseded(self) -> int | None:
        """The token of a newer claim this writer has read (a marker, or a record in
        NAME.fences), if any: its next append raises LogFencedError."""
        return self._deposed[1] if self._deposed is not None else None

    async def wait_superseded(self) -> int:
        """Wait until this writer reads a newer claim; its token (bound it yourself)."""
        while self._deposed is None:
            if self._tail_error is not None:
                raise ConnectionError(f"event log {self.spec}: {describe(self._tail_error)}")
            self._progress.clear()
            await self._progress.wait()
        return self._deposed[1]

    def last_seq(self) -> int:
        if not self._connected:
            raise RuntimeError(f"event log {self.spec}: not connected: await connect() first")
        return self._last_seq

    async def connect(self) -> None:
        """Declare the streams and find the last entry. Idempotent."""
        async with self._lock:
            await self._connect()

    async def claim(self, fence: int) -> None:
        async with self._lock:
            await self._connect()
            await self._claim(fence)

    async def append(
        self, events: Sequence[LogEntry], lines: Sequence[bytes] | None = None
    ) -> None:
        if not events:
            return
        async with self._lock:
            await self._become_writer()
            check_sequence(self._last_seq, events)
            self._refuse_if_deposed()
            first, last = events[0].seq, events[-1].seq
            messages = batches(events, self._fence or 0, self.writer, lines)
            try:
                await self.client.publish(self.name, messages)
                await self._read_back(last)
            except BROKER_ERRORS as error:
                await self._reset()
                raise LogWriteError(
                    errno.EIO,
                    f"event log {self.spec}: appending seq {first}..{last} failed: "
                    f"{describe(error)} (not confirmed: retry the same append; a copy "
                    "that reached the stream is skipped on read)",
                ) from error
            offset = self._own[last]
            if self._deposed is not None and self._deposed[0] < offset:
                raise LogFencedError(
                    f"event log {self.spec}: fencing token {self._fence} was superseded by "
                    f"{self._deposed[1]} before seq {first}..{last} arrived: this informer "
                    "is no longer the log's writer"
                )
            self._last_seq, self._end = last, offset
            self._own = {s: o for s, o in self._own.items() if s > last}

    def read(self, after: int = 0) -> AsyncIterator[LogEntry]:
        """Entries with seq > ``after`` up to the end as of this call: the writer's
        last entry, or, for another reader, an end marker it publishes."""
        bound = (self._last_seq, self._end) if self._fence is not None else None
        return self._read(after, bound)

    async def write_snapshot(self, seq: int, body: bytes) -> None:
        """Publish a snapshot of the projection at ``seq`` (≤ last_seq) to NAME.snapshots."""
        async with self._lock:
            await self._become_writer()
            if not 0 < seq <= self._last_seq:
                raise ValueError(
                    f"event log {self.spec}: no snapshot at seq {seq}: it ends at {self._last_seq}"
                )
            self._refuse_if_deposed()
            await self._publish_snapshot(seq, body, self._end if seq == self._last_seq else -1)

    async def _publish_snapshot(self, seq: int, body: bytes, entry_offset: int) -> None:
        headers: dict[str, object] = {
            KIND: SNAPSHOT,
            SEQ: seq,
            FENCE: self._fence or 0,
            WRITER: self.writer,
            ENTRY_OFFSET: entry_offset,
        }
        try:
            await self.client.publish(self.snapshots, [(body, headers)])
        except BROKER_ERRORS as error:
            await self._reset()
            raise LogWriteError(
                errno.EIO,
                f"event log {self.spec}: writing the snapshot at seq {seq} failed: "
                f"{describe(error)}",
            ) from error

    async def latest_snapshot(self) -> tuple[int, bytes] | None:
        """The newest snapshot its log's writer wrote while it owned the log."""
        try:
            await self.connect()
            if self._fence is None:  # the writer follows the claims already
                await self._load_owners()
            return await self._latest_snapshot()
        except BROKER_ERRORS as error:
            await self._reset()
            raise ConnectionError(f"event log {self.spec}: {describe(error)}") from error

    async def begin_at(self, seq: int, body: bytes) -> None:
        """Start this empty log at a snapshot: ``body`` at ``seq`` is its newest, and its
        next entry is ``seq + 1``. For moving a log whose head retention dropped
        (``ksched log copy``); ValueError once the log holds anything."""
        async with self._lock:
            await self._become_writer()
            if self._last_seq or seq <= 0:
                raise ValueError(
                    f"event log {self.spec}: cannot begin at seq {seq}: it ends at "
                    f"{self._last_seq} (only an empty log begins at a snapshot)"
                )
            await self._publish_snapshot(seq, body, -1)
            self._last_seq = seq

    async def retain(self, covered: int) -> None:
        """Drops nothing: the streams' retention (``x-max-age``, ``x-max-length-bytes``)
        drops old segments by itself; write snapshots more often than it drops them.
        Refuses, as every log, a ``covered`` past the newest snapshot."""
        latest = await self.latest_snapshot()
        newest = latest[0] if latest else 0
        if covered > newest:
            raise ValueError(
                f"event log {self.spec}: cannot drop the entries up to seq {covered}: "
                f"the newest snapshot covers seq {newest}"
            )

    async def close(self) -> None:
        async with self._lock:
            await self._stop_tail()
            await self.client.drop()

    # -- connecting and claiming ------------------------------------------------------

    async def _connect(self) -> None:
        if self._connected:
            return
        try:
            await self.client.declare(self.name, self._retention)
            await self.client.declare(self.fences, {})
            await self.client.declare(self.snapshots, self._retention)
            await self._load_owners()
            end = await self._mark_end(self.name)
            self._last_seq = await self._end_seq(end)
        except BROKER_ERRORS as error:
            await self._reset()
            hint = ""
            if "inequivalent arg 'x-max" in str(error):
                hint = (
                    " (the stream exists with other retention settings: change an existing "
                    "stream's retention with a policy, rabbitmqctl set_policy)"
                )
            raise ConnectionError(f"event log {self.spec}: {describe(error)}{hint}") from error
        self._connected = True

    async def _claim(self, fence: int) -> None:
        try:
            await self._load_owners()
            self._refuse_claim(fence)
            mark = uuid.uuid4().hex
            async with self.client.records(self.name, "last") as records:
                marker = mark_headers(FENCE_MARK, mark, fence, self.writer)
                await self.client.publish(self.name, [(b"", marker)])
                async for r in records:
                    if r.mark == mark:
                        at = r.offset
                        break
                    if r.kind == FENCE_MARK and r.fence > fence:
                        raise self._claimed_by(r.fence, fence)
            last = await self._end_seq(at)
            mine = Claim(fence, self.writer, at)
            await self.client.publish(self.fences, [(msgspec.json.encode(mine), {KIND: CLAIM})])
            claims_end = await self._load_owners()
            self._refuse_claim(fence)
            later = self._owners.claims[self._owners.claims.index(mine) + 1 :]
            if any(c.fence == fence and c.writer != self.writer for c in later):
                raise self._claimed_by(fence, fence)
        except BROKER_ERRORS as error:
            await self._reset()
            raise LogWriteError(
                errno.EIO, f"event log {self.spec}: claiming it failed: {describe(error)}"
            ) from error
        await self._stop_tail()
        self._fence, self._last_seq, self._end = fence, last, at
        self._deposed, self._own, self._tail_offset = None, {}, at
        self._claims_offset = claims_end
        self._start_tail()

    def _refuse_claim(self, fence: int) -> None:
        highest = self._owners.highest()
        if highest > fence:
            raise self._claimed_by(highest, fence)

    def _claimed_by(self, holder: int, fence: int) -> LogFencedError:
        return LogFencedError(
            f"event log {self.spec}: claimed by fencing token {holder}, not {fence}: "
            "another informer is the log's writer"
        )

    async def _become_writer(self) -> None:
        await self._connect()
        if self._fence is None:
            seen = self._last_seq
            await self._claim(0)
            if self._last_seq != seen:
                raise LogFencedError(
                    f"event log {self.spec}: another writer appended to it (it ends at seq "
                    f"{self._last_seq}, this writer saw {seen}): claim it with a lease"
                )
        elif self._tail is None or self._tail.done():
            self._start_tail()  # after a lost connection: from where it stopped

    def _refuse_if_deposed(self) -> None:
        if self._deposed is not None:
            raise LogFencedError(
                f"event log {self.spec}: fencing token {self._fence} was superseded by "
                f"{self._deposed[1]}: this informer is no longer the log's writer"
            )

    # -- following the stream (the writer) ----------------------------------------

    def _start_tail(self) -> None:
        self._tail_error = None
        self._tail = asyncio.create_task(self._follow(), name="log-tail")

    async def _stop_tail(self) -> None:
        tail, self._tail = self._tail, None
        if tail is not None and not tail.done():
            tail.cancel()
            await asyncio.wait([tail])

    async def _follow(self) -> None:
        """Follow the stream and its claims from where this writer stopped reading them
        (after its claim, or where a lost connection cut it)."""
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._follow_entries(self._tail_offset + 1))
                group.create_task(self._follow_claims(self._claims_offset + 1))
        except* BROKER_ERRORS as errors:
            self._tail_error = errors.exceptions[0]
            self._progress.set()

    async def _follow_entries(self, start: int) -> None:
        async with self.client.records(self.name, start, follow=True) as records:
            async for r in records:
                self._tail_offset = r.offset
                if r.kind == ENTRY and r.writer == self.writer:
                    for seq in range(r.seq, r.last + 1):
                        self._own.setdefault(seq, r.offset)
                elif r.kind == FENCE_MARK and self._supersedes(r.fence, r.writer):
                    self._depose(r.offset, r.fence)
                self._progress.set()

    async def _follow_claims(self, start: int) -> None:
        """A newer claim recorded after this writer's: it owns the log from its start,
        which may precede entries this writer reads back (its marker preceded them)."""
        async with self.client.records(self.fences, start, follow=True) as records:
            async for r in records:
                self._claims_offset = r.offset
                if r.kind == CLAIM:
                    claim = msgspec.json.decode(r.body, type=Claim)
                    self._owners.claims.append(claim)
                    if self._supersedes(claim.fence, claim.writer):
                        self._depose(claim.start, claim.fence)
                self._progress.set()

    def _supersedes(self, fence: int, writer: str) -> bool:
        own = self._fence or 0
        return fence > own or (fence == own and writer != self.writer)

    def _depose(self, offset: int, fence: int) -> None:
        if self._deposed is None or offset < self._deposed[0]:
            self._deposed = (offset, fence)

    async def _read_back(self, seq: int) -> None:
        """Wait until the tail has read own entry ``seq`` back (it was confirmed: it is
        there), so where it landed decides whether it counts."""
        async with asyncio.timeout(READ_BACK_TIMEOUT):
            while seq not in self._own:
                if self._tail_error is not None:
                    raise self._tail_error
                self._progress.clear()
                await self._progress.wait()

    async def _reset(self) -> None:
        """After a broker error: forget the connection and the tail, try the next node."""
        await self._stop_tail()
        await self.client.drop()
        self.client.failed()

    # -- reading ----------------------------------------------------------------------

    async def _read(self, after: int, bound: tuple[int, int] | None) -> AsyncIterator[LogEntry]:
        if bound is not None and after >= bound[0]:
            return
        try:
            await self.connect()
            if bound is None:
                await self._load_owners()
                last_offset, last_seq = await self._mark_end(self.name) - 1, None
            else:
                last_seq, last_offset = bound
            first = await self._first_offset(self.name)
            if last_offset < first:
                return
            start = first if after <= 0 else await self._search(after, first, last_offset)
            reading = Reading(self._owners, after, self.spec)
            async with self.client.records(self.name, start) as records:
                async for r in records:
                    if r.offset > last_offset:
                        return
                    before = reading.last
                    if reading.accept(r):
                        for entry in entries(r, before):
                            if last_seq is not None and entry.seq > last_seq:
                                return
                            yield entry
                    if r.offset == last_offset or (last_seq is not None and r.last >= last_seq):
                        return
        except BROKER_ERRORS as error:
            await self._reset()
            raise ConnectionError(f"event log {self.spec}: {describe(error)}") from error

    async def _search(self, after: int, first: int, last_offset: int) -> int:
        """The offset to read from: at or before the first counting entry with seq >
        ``after`` (binary search over [first, last_offset]; valid seqs grow with
        offsets)."""
        low, high = first, last_offset + 1
        while low < high:
            middle = (low + high) // 2
            found = await self._probe(middle, last_offset)
            if found is None or found[1] > after:
                high = middle
            else:
                low = found[0] + 1
        return low

    async def _probe(self, offset: int, last_offset: int) -> tuple[int, int] | None:
        """(offset, last seq) of the first counting batch at or after ``offset``."""
        async with self.client.records(self.name, offset, prefetch=PROBE) as records:
            async for r in records:
                if r.kind == ENTRY and self._owners.counts(r):
                    return r.offset, r.last
                if r.offset >= last_offset:
                    return None
        return None

    async def _last_before(self, end: int) -> tuple[int, int]:
        """(seq, offset) of the last counting entry before offset ``end`` ((0, -1):
        none), read back from ``end`` in growing windows."""
        first = await self._first_offset(self.name)
        width = WINDOW
        while True:
            start = max(first, end - width)
            best = (0, -1)
            async with self.client.records(self.name, start) as records:
                async for r in records:
                    if r.offset >= end:
                        break
                    if r.kind == ENTRY and self._owners.counts(r) and r.last > best[0]:
                        best = (r.last, r.offset)
            if best[1] >= 0 or start <= first:
                return best
            width *= 4

    async def _first_offset(self, stream: str) -> int:
        """The offset of the first message ``stream`` still holds (it holds one: an
        end marker was published before)."""
        async with self.client.records(stream, "first", prefetch=1) as records:
            async for r in records:
                return r.offset
        raise AssertionError("unreachable: a stream read ends only by a timeout")

    async def _mark_end(self, stream: str) -> int:
        """Publish an end marker to ``stream`` and return its offset."""
        mark = uuid.uuid4().hex
        async with self.client.records(stream, "last") as records:
            await self.client.publish(stream, [(b"", mark_headers(END_MARK, mark))])
            async for r in records:
                if r.mark == mark:
                    return r.offset
        raise AssertionError("unreachable: a stream read ends only by a timeout")

    async def _load_owners(self) -> int:
        """Read every claim; returns the offset of NAME.fences up to which it read."""
        end = await self._mark_end(self.fences)
        claims: list[Claim] = []
        async with self.client.records(self.fences, "first") as records:
            async for r in records:
                if r.offset >= end:
                    break
                if r.kind == CLAIM:
                    claims.append(msgspec.json.decode(r.body, type=Claim))
        self._owners = Owners(claims)
        return end

    async def _latest_snapshot(self) -> tuple[int, bytes] | None:
        """:meth:`latest_snapshot`, connected, with the claims loaded."""
        end = await self._mark_end(self.snapshots)
        first = await self._first_offset(self.snapshots)
        width = WINDOW // 8
        while True:
            start = max(first, end - width)
            found: Record | None = None
            async with self.client.records(self.snapshots, start) as records:
                async for r in records:
                    if r.offset >= end:
                        break
                    if r.kind == SNAPSHOT and self._snapshot_counts(r):
                        found = r
            if found is not None:
                return found.seq, found.body
            if start <= first:
                return None
            width *= 4

    async def _end_seq(self, end: int) -> int:
        """The log's last seq as of offset ``end``: its last entry's, or its newest
        snapshot's when that is later (a log that began at a snapshot)."""
        last, _ = await self._last_before(end)
        snapshot = await self._latest_snapshot()
        return max(last, snapshot[0] if snapshot else 0)

    def _snapshot_counts(self, r: Record) -> bool:
        if r.entry_offset >= 0:
            owner = self._owners.owner_at(r.entry_offset)
            return owner is not None and (owner.fence, owner.writer) == (r.fence, r.writer)
        return any((c.fence, c.writer) == (r.fence, r.writer) for c in self._owners.claims)
