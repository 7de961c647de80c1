"""An event log in a list: the embedded mode's log when nothing must survive a restart."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from contracts.events import LogEntry
from services.common.eventlog._sequence import check_sequence


class MemoryEventLog:
    """EventLog in memory. Appends are as durable as the process."""

    def __init__(self) -> None:
        self._events: list[LogEntry] = []

    def last_seq(self) -> int:
        return self._events[-1].seq if self._events else 0

    async def append(self, events: Sequence[LogEntry]) -> None:
        check_sequence(self.last_seq(), events)
        self._events.extend(events)

    def read(self, after: int = 0) -> Iterator[LogEntry]:
        """Entries with seq > ``after`` that were appended before this call."""
        end = len(self._events)
        # Seqs are consecutive from 1, so entry ``seq`` sits at index ``seq - 1``.
        return (self._events[i] for i in range(max(after, 0), end))

    async def close(self) -> None:
        pass
