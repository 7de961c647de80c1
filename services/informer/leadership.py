"""The informer as its lease's leader: its appends and the batches it acknowledges
without appending carry the lease (the event log's claim; the elector's ``confirm``),
and a refusal deposes it: :attr:`Leadership.deposed` is set (the process then exits,
services.cli.runtime) and the batch raises Deposed, which hands it back to the queue
for the leader instead of acknowledging or dead-lettering it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from contracts.events import LogEntry
from services.common.clock import Clock, SystemClock
from services.common.eventlog import EventLog, LogFencedError
from services.common.store import Deposed
from services.informer import startup

log = logging.getLogger("ksched.informer")


class Leadership:
    def __init__(
        self,
        event_log: EventLog,
        confirm: Callable[[], Awaitable[None]] | None = None,
        clock: Clock | None = None,
    ) -> None:
        """``confirm``: raises Deposed unless this informer still leads its lease."""
        self._log = event_log
        self._confirm = confirm
        self._clock: Clock = clock or SystemClock()
        self.deposed = asyncio.Event()
        """Set once a write was refused for this informer's fencing token."""

    async def claim(self, token: int) -> None:
        """Claim the event log with the lease's fencing token, before the first append;
        retried while the log's broker is unavailable (a node restarted by the fault
        that made this informer the leader has no replica of the stream yet: startup)."""
        await startup.until_available(self._clock, lambda: self._log.claim(token))

    async def append(
        self, events: Sequence[LogEntry], lines: Sequence[bytes] | None = None
    ) -> None:
        """Append ``events``; with none, confirm the lease instead (a deposed informer's
        stale view would drop a Binding for a pod its successor ingested, and
        acknowledge it)."""
        try:
            if events:
                await self._log.append(events, lines)
            elif self._confirm is not None:
                await self._confirm()
        except (Deposed, LogFencedError) as error:
            self.depose(error)
            raise Deposed(str(error)) from error

    def depose(self, error: Exception) -> None:
        if not self.deposed.is_set():
            log.error("%s: another informer leads; this one stops", error)
            self.deposed.set()
