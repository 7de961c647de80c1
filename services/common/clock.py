"""Time, injected. Services never call time.time() or asyncio.sleep() directly: they take
a Clock, so tests drive permit timers, backoff and flush periods with FakeClock."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall clock)."""

    async def sleep(self, seconds: float) -> None:
        """Return after ``seconds`` of this clock's time."""


class SystemClock:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class FakeClock:
    """A clock that moves only when a test calls :meth:`advance`."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), future))
        await future

    def step(self, seconds: float) -> None:
        """Move time forward without yielding to the loop (upstream's fake clock ``Step``),
        for code that only reads :meth:`now`. A sleeper it would wake is an error: use
        :meth:`advance` for those."""
        self.set_time(self._now + seconds)

    def set_time(self, now: float) -> None:
        """Put the clock at ``now`` (upstream's fake clock ``SetTime``); see :meth:`step`."""
        if any(wake <= now and not f.done() for wake, _, f in self._sleepers):
            raise RuntimeError("a sleeper is due: await advance() instead")
        self._now = now

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose time has come, in order."""
        target = self._now + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            wake, _, future = heapq.heappop(self._sleepers)
            self._now = max(self._now, wake)
            if not future.done():
                future.set_result(None)
            for _ in range(3):
                await asyncio.sleep(0)
        self._now = target
        await asyncio.sleep(0)

    @property
    def sleepers(self) -> int:
        return sum(1 for *_, f in self._sleepers if not f.done())
