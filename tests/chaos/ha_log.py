"""The HA mode's view of the event log (a RabbitMQ stream) and its own checks.

:func:`read_stream` reads every entry of the stream from its first offset, as one more
consumer. :func:`seq_rows` judges the sequence: every seq from the first to the last
exactly once, where an entry appended twice after a retry (the same seq, the same
entry) is skipped as the log's readers skip it, and two different entries with one seq
(two writers) are a violation. :func:`leader_rows` judges the leases at the end: each
role has exactly one holder, unexpired, and it is a replica of the run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import aio_pika

from tests.chaos.checks import Row, count_row
from tests.chaos.ha_processes import expired

IDLE = 3.0
"""Seconds without a new entry after which the stream is taken as read to its end."""
READ_TIMEOUT = 300.0


async def read_stream(urls: Sequence[str], queue: str) -> list[bytes]:
    """Every message of the stream ``queue``, from its first offset (bounded); the first
    node of ``urls`` that answers serves it."""
    error: BaseException | None = None
    for url in urls:
        try:
            connection = await aio_pika.connect(url, timeout=10)
        except (OSError, aio_pika.exceptions.AMQPError) as failed:
            error = failed
            continue
        try:
            return await _read(connection, queue)
        finally:
            await connection.close()
    raise AssertionError(f"no node of the cluster serves the stream {queue}: {error}")


async def _read(connection: aio_pika.abc.AbstractConnection, queue: str) -> list[bytes]:
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=1000)
    stream = await channel.declare_queue(
        queue, durable=True, passive=True, arguments={"x-queue-type": "stream"}
    )
    bodies: list[bytes] = []
    arrived = asyncio.Event()

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        bodies.append(message.body)
        arrived.set()
        await message.ack()

    tag = await stream.consume(on_message, arguments={"x-stream-offset": "first"})
    deadline = time.monotonic() + READ_TIMEOUT
    try:
        while time.monotonic() < deadline:
            arrived.clear()
            try:
                await asyncio.wait_for(arrived.wait(), IDLE)
            except TimeoutError:
                return bodies
        raise AssertionError(f"the stream {queue} still delivers after {READ_TIMEOUT:g} s")
    finally:
        await stream.cancel(tag)


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


def seq_rows(conflicting: Sequence[str], missing: Sequence[str]) -> list[Row]:
    return [
        count_row("seqs written twice, differently (log)", conflicting),
        count_row("seqs missing (log)", missing),
    ]


def leader_rows(
    leases: Sequence[dict[str, Any]], roles: Sequence[str], ours: set[int]
) -> list[Row]:
    """One row per role: exactly one lease, held by a live replica of the run."""
    rows = []
    for role in roles:
        held = [lease for lease in leases if lease.get("role") == role and not expired(lease)]
        holders = [f"{lease.get('holder')} (pid {lease.get('pid')})" for lease in held]
        ok = len(held) == 1 and int(held[0].get("pid") or 0) in ours
        value = holders[0] if len(held) == 1 else f"{len(held)} leaders"
        detail = ", ".join(holders) if holders else "no lease"
        rows.append(Row(f"{role}: exactly one leader at the end", value, ok, detail))
    return rows
