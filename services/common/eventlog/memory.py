"""An event log in a list: the embedded mode's log when nothing must survive a restart.

One object is one writer's log (a process's), so its fencing is the token alone: a claim
by a lower token than one already made is refused. It keeps its newest snapshot only."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from contracts.events import LogEntry
from services.common.eventlog._sequence import check_sequence
from services.common.eventlog.base import LogFencedError


class MemoryEventLog:
    """EventLog in memory. Appends are as durable as the process."""

    def __init__(self) -> None:
        self._events: list[LogEntry] = []
        self._base = 0
        """The seq before the first entry held (retention dropped those up to it)."""
        self._fence = 0
        self._snapshot: tuple[int, bytes] | None = None

    async def connect(self) -> None:
        pass

    def last_seq(self) -> int:
        return self._events[-1].seq if self._events else self._base

    async def append(
        self, events: Sequence[LogEntry], lines: Sequence[bytes] | None = None
    ) -> None:
        check_sequence(self.last_seq(), events)
        self._events.extend(events)

    def read(self, after: int = 0) -> AsyncIterator[LogEntry]:
        """Entries with seq > ``after`` that were appended before this call."""
        # Seqs are consecutive from the base on: entry ``seq`` sits at ``seq - base - 1``.
        return _iterate(self._events[max(after - self._base, 0) :])

    async def claim(self, fence: int) -> None:
        if fence < self._fence:
            raise LogFencedError(f"the event log is claimed by token {self._fence} > {fence}")
        self._fence = fence

    async def write_snapshot(self, seq: int, body: bytes) -> None:
        if not 0 < seq <= self.last_seq():
            raise ValueError(f"no snapshot at seq {seq}: the event log ends at {self.last_seq()}")
        self._snapshot = (seq, body)

    async def latest_snapshot(self) -> tuple[int, bytes] | None:
        return self._snapshot

    async def retain(self, covered: int) -> None:
        newest = self._snapshot[0] if self._snapshot else 0
        if covered > newest:
            raise ValueError(
                f"cannot drop the entries up to seq {covered}: the newest snapshot "
                f"covers seq {newest}"
            )
        if covered > self._base:
            del self._events[: covered - self._base]
            self._base = covered

    async def close(self) -> None:
        pass


async def _iterate(entries: list[LogEntry]) -> AsyncIterator[LogEntry]:
    for entry in entries:
        yield entry
