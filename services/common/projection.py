"""Following the event log: the one projection of ``ksched.cluster`` every service keeps.

A service that holds state derived from the log (the queue's SchedulingQueue, the
scheduler's Snapshot and pending pods, the descheduler) follows it as client-go's
Reflector follows the API server: it lists (``load``, from the store) and then watches
(``apply``, from the feed), and lists again when the watch cannot continue::

                 reload()               load done: applied_seq = epoch.seq,
    Buffering ─────────────▶ Loading ──────────────────────────────────▶ Following
    (start)                  │  ▲  ▲      then the buffered entries past it  │
                   StoreLost │  │  │                                         │
        (wait until live, ◀──┘  │  └──── a gap in the feed (seq > applied_seq + 1),
         load again)            │        or reload(lost) after a StoreLost ◀─┘
                    other error │ the next feed (which raises meanwhile)
                                ▼      │
                               Due ────┘

- Following, ``feed`` skips entries with seq ≤ ``applied_seq`` (duplicates, redeliveries)
  and applies those that continue it. Otherwise entries are buffered; once a load is
  done, the buffered entries past the seq it read are applied in order. The store
  applies an entry before the informer publishes it and a load reads the seq before the
  objects, so every entry after that seq reaches the feed and the objects are as of that
  seq or later; entries carry whole objects, so applying one again over a newer read
  converges to the same state.
- ``apply`` is given runs of entries in seq order, each seq once, past ``applied_seq``
  (consecutive while Following); ``load`` runs alone (nothing is applied while it reads
  the store, and one load at a time).
- A load attaches to the store first (see the marker's state machine in
  :mod:`services.common.store.base`): it waits until the store is live, except while the
  projection never saw a live store and no StoreLost was met, when a Blank store is an
  empty cluster. ``lost`` tells the load that the epoch it held is gone (what the
  service had written to the store went with it and may need writing back).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from contracts.events import LogEntry
from services.common.clock import Clock
from services.common.store.base import ClusterStore, Epoch, StoreLost
from services.common.store.live import attach_when_live

Load = Callable[[Epoch, "StoreLost | None"], Awaitable[None]]
"""Replace the service's state with the store's, which is as of ``epoch.seq`` or later.
The second argument is the StoreLost that made this load necessary (None for a start
or a gap). May raise StoreLost (the projection waits for a live store and loads again)."""

Apply = Callable[[Sequence[LogEntry]], None]
"""Apply consecutive log entries that continue the applied seq, in order."""


class LogProjection:
    """One service's projection of the event log (see the module docstring)."""

    def __init__(
        self,
        store: ClusterStore,
        clock: Clock,
        log: logging.Logger,
        *,
        load: Load,
        apply: Apply,
    ) -> None:
        """``log``: the service's logger (gaps and reloads are reported there)."""
        self._store, self._clock, self._log = store, clock, log
        self._load, self._apply = load, apply
        self._applied = 0
        self._epoch: Epoch | None = None
        self._buffer: list[LogEntry] | None = []
        """Entries fed while not Following (None while Following)."""
        self._due = False
        """A load failed (not with StoreLost) and has not succeeded since."""
        self._due_lost: StoreLost | None = None
        """The StoreLost the failed load was to recover from: its retry recovers too."""
        self._lock = asyncio.Lock()
        self._advanced = asyncio.Event()

    @property
    def applied_seq(self) -> int:
        """The seq of the last log entry the service's state reflects (0 before any)."""
        return self._applied

    @property
    def epoch(self) -> Epoch | None:
        """The store's marker as the last load attached to it (None before the first)."""
        return self._epoch

    @property
    def following(self) -> bool:
        """Loaded, and applying the feed as it comes (no load running or due)."""
        return self._buffer is None

    async def feed(self, entries: Sequence[LogEntry]) -> None:
        """Apply ``entries`` from the feed: duplicates are skipped, a gap loads from the
        store, and while a load runs (or before the first) they wait in the buffer.
        Raises what a load that is due raised (the caller's batch is then redelivered)."""
        if self._buffer is not None:
            self._buffer.extend(e for e in entries if e.seq > self._last_buffered())
            if self._due and not self._lock.locked():
                await self._catch_up()
            return
        rest = self._apply_run(entries)
        if rest:
            self._log.warning(
                "gap in the cluster feed (%d → %d): reloading from the store",
                self._applied,
                rest[0].seq,
            )
            self._buffer = list(rest)
            await self._catch_up()

    async def reload(self, lost: StoreLost | None = None) -> None:
        """Load from the store, then follow the feed again. With ``lost`` (a store call
        of the service raised it): unless another task has loaded from the store's new
        epoch meanwhile, wait for a live store and load, telling the load it was lost."""
        async with self._lock:
            if lost is not None and await self._current():
                return
            if lost is not None:
                self._log.warning("reloading from the store: %s", lost)
            if self._buffer is None:
                self._buffer = []
            await self._load_and_follow(lost)

    async def wait_for(self, seq: int, *, within: float) -> bool:
        """Wait until ``seq`` is applied or ``within`` seconds (of the clock) passed;
        True if it is applied. (Not ``asyncio.timeout``: the clock is injected.)"""
        if self._applied >= seq:
            return True
        expired = asyncio.ensure_future(self._clock.sleep(within))
        try:
            while self._applied < seq and not expired.done():
                self._advanced.clear()
                advanced = asyncio.ensure_future(self._advanced.wait())
                await asyncio.wait({advanced, expired}, return_when=asyncio.FIRST_COMPLETED)
                advanced.cancel()
        finally:
            expired.cancel()
        return self._applied >= seq

    async def _catch_up(self) -> None:
        """Run the load that is due (a gap, or one that failed), unless a load already
        ran since it became due."""
        async with self._lock:
            if self._buffer is not None:
                await self._load_and_follow(self._due_lost if self._due else None)

    async def _current(self) -> bool:
        """Whether this projection was loaded from the store's current live epoch."""
        if self._epoch is None or self._epoch.state != "live" or self._buffer is not None:
            return False
        current = await self._store.epoch()
        return current.state == "live" and current.token == self._epoch.token

    async def _load_and_follow(self, lost: StoreLost | None) -> None:
        """With the lock held and the buffer on: load until a load succeeds, apply the
        buffered entries past the loaded seq, and follow."""
        try:
            while self._buffer is not None:  # until a load succeeds
                try:
                    attached = self._epoch is not None and self._epoch.state == "live"
                    epoch = await attach_when_live(
                        self._store,
                        self._clock,
                        self._log,
                        blank_ok=lost is None and not attached,
                    )
                    await self._load(epoch, lost)
                except StoreLost as again:
                    self._log.warning("reloading from the store: %s", again)
                    lost = again
                    continue
                self._epoch, self._applied = epoch, epoch.seq
                buffered, self._buffer = self._buffer, None
                first = next((e.seq for e in buffered if e.seq > epoch.seq), None)
                if first is not None and first > epoch.seq + 1:
                    self._log.warning(
                        "the store was at seq %d when loaded and the feed continues at %d: "
                        "applied over the objects, which were read after that seq",
                        epoch.seq,
                        first,
                    )
                self._apply_run(buffered, over_gaps=True)
        except BaseException:
            self._due, self._due_lost = True, lost
            raise
        self._due, self._due_lost = False, None
        self._advanced.set()

    def _apply_run(
        self, entries: Sequence[LogEntry], *, over_gaps: bool = False
    ) -> Sequence[LogEntry]:
        """Apply the entries that continue the applied seq; return those from a gap on
        (``over_gaps``: apply every entry past the applied seq, in order)."""
        applied = self._applied
        run: list[LogEntry] = []
        rest: Sequence[LogEntry] = ()
        for i, entry in enumerate(entries):
            if entry.seq <= applied:
                continue
            if entry.seq != applied + 1 and not over_gaps:
                rest = entries[i:]
                break
            run.append(entry)
            applied = entry.seq
        if run:
            self._apply(run)
            self._applied = applied
            self._advanced.set()
        return rest

    def _last_buffered(self) -> int:
        buffer = self._buffer
        return buffer[-1].seq if buffer else self._applied
