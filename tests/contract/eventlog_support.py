"""Builders of the EventLog contract tests (test_eventlog.py, test_eventlog_stream.py)."""

from __future__ import annotations

from contracts.events import LogEntry, NodeEntry, PodEntry
from tests.builders import make_node, make_pod


def event(seq: int) -> LogEntry:
    """Alternating node and pod events, so both union members round-trip."""
    if seq % 2:
        return NodeEntry(seq=seq, type="ADDED", object=make_node(f"n{seq}"))
    pod = make_pod(f"p{seq}", uid=f"uid-{seq}")
    return PodEntry(seq=seq, type="MODIFIED", at=float(seq), object=pod)


def events(first: int, last: int) -> list[LogEntry]:
    return [event(seq) for seq in range(first, last + 1)]
