"""The append rule both event logs enforce."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.events import LogEntry
from services.common.eventlog.base import LogSequenceError


def check_sequence(last_seq: int, events: Sequence[LogEntry]) -> None:
    """Raise LogSequenceError unless ``events`` continue ``last_seq`` without gap or repeat."""
    for offset, event in enumerate(events, start=1):
        if event.seq != last_seq + offset:
            raise LogSequenceError(
                f"expected seq {last_seq + offset}, got {event.seq} "
                f"(entry {offset} of {len(events)}; log ends at {last_seq})"
            )
