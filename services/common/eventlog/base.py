"""The event log: append-only, sequenced, durable. The informer is its only writer.

Every other piece of state (the Redis projection, each scheduler's snapshot, the queue)
can be rebuilt by reading it from the start; ``ksched replay LOG`` does exactly that.
A file log stores one JSON ClusterEvent per line; an append is durable (fsync) when it
returns; a torn last line left by a crash is discarded when the log is opened.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from contracts.events import ClusterEvent


class EventLog(Protocol):
    def last_seq(self) -> int:
        """The seq of the last entry (0 when empty)."""

    async def append(self, events: Sequence[ClusterEvent]) -> None:
        """Append, durably. ``events[0].seq`` must be ``last_seq() + 1`` and the rest
        consecutive; anything else raises :class:`LogSequenceError`."""

    def read(self, after: int = 0) -> Iterator[ClusterEvent]:
        """Entries with seq > ``after``, in order."""

    async def close(self) -> None: ...


class LogSequenceError(ValueError):
    """An append that would leave a gap or repeat a seq."""
