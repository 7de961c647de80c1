"""The event log: append-only, sequenced, durable. The informer is its only writer.

Every other piece of state (the Redis projection, each scheduler's snapshot, the queue)
can be rebuilt by reading it from its newest snapshot on (from the start when it has
none); ``ksched replay LOG`` does exactly that. Entries a snapshot covers may be dropped
(:meth:`EventLog.retain`): a log's first entry then follows a snapshot, not seq 0.
A file log stores one JSON LogEntry per line; an append is durable (fsync) when it
returns; a torn last line left by a crash is discarded when the log is opened. An append
that cannot be made durable (disk full, fsync failed) raises :class:`LogWriteError` and
leaves nothing of itself in the log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from contracts.events import LogEntry


class EventLog(Protocol):
    async def connect(self) -> None:
        """Reach the log's medium: a stream's broker (declare it, find its last entry);
        nothing for a file or memory. Idempotent; the informer calls it first, since
        :meth:`last_seq` needs it on a stream."""

    def last_seq(self) -> int:
        """The seq of the last entry (0 when empty)."""

    async def append(
        self, events: Sequence[LogEntry], lines: Sequence[bytes] | None = None
    ) -> None:
        """Append, durably. ``events[0].seq`` must be ``last_seq() + 1`` and the rest
        consecutive; anything else raises :class:`LogSequenceError`. Raises
        :class:`LogWriteError` when the entries could not be made durable: none of them
        is in the log, and the same append may be retried later. ``lines``, when given,
        is each entry's JSON already encoded (services.common.eventlog.encoded), which a
        log that stores JSON writes as it is."""

    def read(self, after: int = 0) -> AsyncIterator[LogEntry]:
        """Entries with seq > ``after``, in order (``async for``): those appended before
        the call, and on a shared medium (a stream) those other writers appended before it."""

    async def claim(self, fence: int) -> None:
        """Make this log's writer the holder of fencing token ``fence`` (a lease's token,
        which only grows): a new leader calls it once, before its first append. Afterwards
        :meth:`last_seq` covers every entry appended before the claim, by whichever writer,
        and an append by a writer whose token is lower (a deposed leader that woke up)
        raises :class:`LogFencedError`. Raises LogFencedError itself when a higher token
        has claimed the log already."""

    async def write_snapshot(self, seq: int, body: bytes) -> None:
        """Keep ``body`` durably as the snapshot of the projection at ``seq`` (an entry
        this log holds or held: ``0 < seq <= last_seq()``, else ValueError). What it
        holds is :mod:`services.common.eventlog.snapshot`'s business, not the log's.
        Older snapshots may be dropped; a snapshot at the same seq replaces it."""

    async def latest_snapshot(self) -> tuple[int, bytes] | None:
        """The newest snapshot's seq and body, or None if none was written."""

    async def retain(self, covered: int) -> None:
        """Drop the entries with seq <= ``covered`` (a snapshot covers them; ValueError
        if ``covered`` passes the newest snapshot's seq): afterwards :meth:`read` starts
        at a later seq than ``after + 1`` for ``after < covered``. The caller keeps its
        retention window by passing less than the snapshot's seq. A log whose medium
        retains by itself (a stream's max-age) may ignore it."""

    async def close(self) -> None: ...


class LogSequenceError(ValueError):
    """An append that would leave a gap or repeat a seq."""


class LogFencedError(RuntimeError):
    """An append or claim by a writer that is no longer the log's writer: another one
    claimed the log with a higher fencing token, or appended behind this one's back.
    Nothing of it is in the log. The caller has lost its role: it stops writing (the
    informer exits, so that a supervisor restarts it as a standby)."""


class LogMismatchError(ValueError):
    """The store has applied entries this log does not hold: the log is not the one the
    store was built from (a relative path opened from another working directory, a new
    file). A restart cannot fix it: the caller stops and names the log; the user points
    the informer at the right log, or empties the store to rebuild it from this one."""


class LogWriteError(OSError):
    """An append that could not be made durable (``errno`` says why: ENOSPC, EIO…).
    Nothing of it is in the log: the caller must not acknowledge what it was recording,
    and retries the same append once the log is writable again."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()  # one line, without "[Errno N]"


async def read_all(log: EventLog, after: int = 0) -> list[LogEntry]:
    """Every entry of ``log`` with seq > ``after``, in a list (a replay, a test)."""
    return [entry async for entry in log.read(after)]


def check_matches(name: str, last: int, applied: int) -> None:
    """LogMismatchError unless the log ``name`` (``event log PATH``), which ends at seq
    ``last``, holds every entry up to seq ``applied``, which a live store has applied:
    the informer checks it at start, and ``ksched up`` before it starts anything."""
    if applied > last:
        raise LogMismatchError(
            f"{name} ends at seq {last} but the store has applied seq {applied}: it is "
            "not the log this store was built from; point --event-log (KSCHED_EVENT_LOG) "
            "at that log, or empty the store to rebuild it from this one"
        )
