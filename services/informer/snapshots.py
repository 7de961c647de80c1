"""When the informer writes a snapshot of the projection, and the retention after it.

The informer, the log's single writer, takes a snapshot from its own view of the live
objects (:class:`~services.informer.state.ClusterObjects`) between two batches, when
the view is exactly the log up to its last seq (never a batch half applied: the view
takes a batch only once the log holds it). Taking it is synchronous and cheap (the view
keeps each object's encoded bytes); writing it and dropping what it covers run in the
background, one at a time::

                 due(seq)                    written
    Idle ─────────────────────▶ Writing ──────────────────▶ Idle (last = seq)
     ▲                            │  then retain(seq - retention)
     └──── failed (logged; due again at the next batch) ◀──┘

A snapshot is due once ``every`` entries were appended since the last one, or
``interval`` seconds passed and at least one entry was. See
:mod:`services.common.eventlog.snapshot` for what it holds.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from services.common.clock import Clock
from services.common.eventlog import EventLog
from services.common.eventlog.snapshot import KIND_ORDER, encode
from services.informer.state import ClusterObjects

log = logging.getLogger("ksched.informer")


@dataclass(frozen=True, slots=True)
class SnapshotPolicy:
    """``InformerSettings``' snapshot_every, snapshot_interval and log_retention."""

    every: int
    """Entries between two snapshots (0: never by count)."""
    interval: float
    """Seconds after which a grown log gets a snapshot anyway (0: never by time)."""
    retention: int
    """Entries kept before the newest snapshot."""


class SnapshotWriter:
    """Takes the informer's snapshots (see the module docstring)."""

    def __init__(self, event_log: EventLog, clock: Clock, policy: SnapshotPolicy) -> None:
        self._log, self._clock, self.policy = event_log, clock, policy
        self._last = 0
        """The seq of the newest snapshot (written, or being written)."""
        self._last_at = clock.now()
        self._task: asyncio.Task[None] | None = None
        self.written: list[int] = []
        """The seqs of the snapshots written by this writer, in order."""

    async def start(self) -> None:
        """Count from the log's newest snapshot (a restarted informer's)."""
        found = await self._log.latest_snapshot()
        self._last = found[0] if found is not None else 0
        self._last_at = self._clock.now()

    def due(self, seq: int) -> bool:
        """Whether the view at ``seq`` should be snapshot now."""
        if seq <= self._last or (self._task is not None and not self._task.done()):
            return False
        every, interval = self.policy.every, self.policy.interval
        if every and seq - self._last >= every:
            return True
        return bool(interval) and self._clock.now() - self._last_at >= interval

    def maybe_take(self, objects: ClusterObjects, seq: int) -> bool:
        """Take a snapshot of ``objects``, which are the log up to ``seq``, if one is
        due (the caller holds the view still meanwhile: this does not wait). True if
        it took one; it is written in the background (:meth:`wait`)."""
        if not self.due(seq):
            return False
        body = encode(
            seq, ((kind, obj) for kind in KIND_ORDER for obj in objects.encoded_all(kind))
        )
        previous = self._last, self._last_at
        self._last, self._last_at = seq, self._clock.now()
        self._task = asyncio.create_task(self._write(seq, body, previous), name="snapshot")
        return True

    async def _write(self, seq: int, body: bytes, previous: tuple[int, float]) -> None:
        try:
            await self._log.write_snapshot(seq, body)
        except Exception:
            self._last, self._last_at = previous  # due again at the next batch
            log.exception("writing the snapshot at seq %d failed", seq)
            return
        self.written.append(seq)
        covered = seq - self.policy.retention
        try:
            if covered > 0:
                await self._log.retain(covered)
        except Exception:
            log.exception("dropping the event log entries up to seq %d failed", covered)
        log.info(
            "snapshot at seq %d (%d bytes) written; entries up to seq %d dropped",
            seq,
            len(body),
            max(covered, 0),
        )

    async def wait(self) -> None:
        """Until the snapshot being written (if any) is written."""
        if self._task is not None:
            await asyncio.shield(self._task)
