"""The HA mode's view of the event log (a RabbitMQ stream) and its own checks.

:func:`read_entries` reads the log from the start through the EventLog contract (the
stream's own rules: markers, a deposed writer's entries and a retried append's copies
do not count). :func:`seq_rows` judges what it yields: every seq from the first to the
last exactly once (two different entries with one seq are two writers; the same entry
twice a copy the log should have skipped). :func:`leader_rows` judges the leases at the
end: each role has exactly one holder, unexpired, and it is a replica of the run.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from tests.chaos.checks import Row, count_row
from tests.chaos.ha_processes import expired

READ_TIMEOUT = 300.0
"""Seconds reading the whole log may take."""


async def read_entries(amqp_url: str, namespace: str) -> list[bytes]:
    """Every entry of the event log (``stream://`` under ``namespace``), read from the
    start through the EventLog contract, as the informer's catch-up and ``ksched replay``
    read it: markers, entries of a deposed writer and copies of a retried append are
    left out by the log itself; a gap raises (LogSequenceError, a ValueError)."""
    import msgspec

    from services.common.eventlog import open_event_log
    from services.common.eventlog.options import StreamOptions

    log = open_event_log("stream://", stream=StreamOptions(amqp_url=amqp_url, namespace=namespace))
    try:
        async with asyncio.timeout(READ_TIMEOUT):
            await log.connect()
            return [msgspec.json.encode(entry) async for entry in log.read(0)]
    finally:
        await log.close()


async def last_seq(amqp_url: str, namespace: str) -> int:
    """The event log's last seq (``stream://`` under ``namespace``)."""
    from services.common.eventlog import open_event_log
    from services.common.eventlog.options import StreamOptions

    log = open_event_log("stream://", stream=StreamOptions(amqp_url=amqp_url, namespace=namespace))
    try:
        async with asyncio.timeout(READ_TIMEOUT):
            await log.connect()
            return log.last_seq()
    finally:
        await log.close()


def entries_in_order(bodies: Sequence[bytes]) -> tuple[list[bytes], list[str], list[str], int]:
    """(the entries once each, in seq order; seqs with two different entries; seqs
    missing between the first and the last; entries appended again identically)."""
    by_seq: dict[int, list[bytes]] = defaultdict(list)
    for body in bodies:
        entry = json.loads(body)
        by_seq[int(entry["seq"])].append(body)
    conflicting = [
        str(seq) for seq, same in by_seq.items() if len({_canonical(b) for b in same}) > 1
    ]
    again = sum(len(same) - 1 for same in by_seq.values())
    missing: list[str] = []
    if by_seq:
        first, last = min(by_seq), max(by_seq)
        missing = [str(seq) for seq in range(first, last + 1) if seq not in by_seq]
    ordered = [by_seq[seq][0] for seq in sorted(by_seq)]
    return ordered, conflicting, missing, again


def _canonical(body: bytes) -> str:
    return json.dumps(json.loads(body), sort_keys=True)


def seq_rows(
    conflicting: Sequence[str], missing: Sequence[str], again: int, unreadable: str | None
) -> list[Row]:
    return [
        count_row("seqs written twice, differently (log)", conflicting),
        count_row("seqs read twice (log)", [f"{again} entries"] if again else []),
        count_row("seqs missing (log)", missing),
        Row(
            "log read from start to end",
            "no" if unreadable else "yes",
            not unreadable,
            unreadable or "",
        ),
    ]


def leader_rows(
    leases: Sequence[dict[str, Any]], roles: Sequence[str], ours: set[int], *, now: float
) -> list[Row]:
    """One row per role: exactly one lease unexpired at ``now`` (when the leases were
    read: the replicas stop right after, and their leases lapse), held by a live replica
    of the run."""
    rows = []
    for role in roles:
        held = [lease for lease in leases if lease.get("role") == role and not expired(lease, now)]
        holders = [f"{lease.get('holder')} (pid {lease.get('pid')})" for lease in held]
        ok = len(held) == 1 and int(held[0].get("pid") or 0) in ours
        value = holders[0] if len(held) == 1 else f"{len(held)} leaders"
        detail = ", ".join(holders) if holders else "no lease"
        rows.append(Row(f"{role}: exactly one leader at the end", value, ok, detail))
    return rows
