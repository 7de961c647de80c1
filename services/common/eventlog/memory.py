"""An event log in a list: the embedded mode's log when nothing must survive a restart.

One object is one writer's log (a process's), so its fencing is the token alone: a claim
by a lower token than one already made is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from contracts.events import LogEntry
from services.common.eventlog._sequence import check_sequence
from services.common.eventlog.base import LogFencedError


class MemoryEventLog:
    """EventLog in memory. Appends are as durable as the process."""

    def __init__(self) -> None:
        self._events: list[LogEntry] = []
        self._fence = 0

    async def connect(self) -> None:
        pass

    def last_seq(self) -> int:
        return self._events[-1].seq if self._events else 0

    async def append(self, events: Sequence[LogEntry]) -> None:
        check_sequence(self.last_seq(), events)
        self._events.extend(events)

    def read(self, after: int = 0) -> AsyncIterator[LogEntry]:
        """Entries with seq > ``after`` that were appended before this call."""
        # Seqs are consecutive from 1, so entry ``seq`` sits at index ``seq - 1``.
        return _iterate(self._events[max(after, 0) :])

    async def claim(self, fence: int) -> None:
        if fence < self._fence:
            raise LogFencedError(f"the event log is claimed by token {self._fence} > {fence}")
        self._fence = fence

    async def close(self) -> None:
        pass


async def _iterate(entries: list[LogEntry]) -> AsyncIterator[LogEntry]:
    for entry in entries:
        yield entry
