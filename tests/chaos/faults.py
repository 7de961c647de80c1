"""What the chaos run does to ksched, on a seeded timeline.

Faults (``--faults``, all by default):

- ``kill``: kill -9 a random service and start it again; the full run does it every 2-5 s
  (seeded) until every pod is bound, the short run once.
- ``broker``: stop RabbitMQ and start it again (same node, same data: durable queues and
  persistent messages survive; every connection drops).
- ``redis``: stop redis-server and start it again; it keeps nothing on disk, so it comes
  back empty.
- ``double``: kill -9 two services at the same moment, then start both.

The one-off faults fire one after the other, each at a fixed fraction of the publishing
window or once the one before is over (the short run's ``kill`` at a tenth, ``broker`` at
a quarter, ``double`` at half, ``redis`` at three quarters), so each hits a pipeline with
pods being ingested, scheduled and bound. Service kills are serialised (one lock): two
faults never pick the same process.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from tests.integration.harness import Processes

FAULTS = ("kill", "broker", "redis", "double")
SERVICES = ("informer", "queue", "scheduler", "binder")
KILL_INTERVAL = (2.0, 5.0)
"""Seconds between two kills in the full run (uniform, seeded)."""
ONE_OFF_AT = {"kill": 0.1, "broker": 0.25, "double": 0.5, "redis": 0.75}
"""When each one-off fault fires, as a fraction of the publishing window."""

log = logging.getLogger("chaos.faults")


class Servers(Protocol):
    """The run's own RabbitMQ and Redis."""

    async def restart_broker(self) -> None: ...

    async def restart_redis(self) -> None: ...


@dataclass
class Chaos:
    processes: Processes
    servers: Servers
    rng: random.Random
    faults: frozenset[str]
    short: bool
    window: float
    """Seconds the workload is published over; one-off faults are placed within it."""
    injected: Counter[str] = field(default_factory=Counter)
    timeline: list[str] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    _kills: asyncio.Lock = field(default_factory=asyncio.Lock)
    t0: float = field(default_factory=time.monotonic)
    """When the workload's pods started being published (the timeline's zero)."""

    def restart_clock(self) -> None:
        self.t0 = time.monotonic()

    async def run(self, done: asyncio.Event) -> None:
        """Inject every fault asked for; the repeated kills stop once ``done`` is set.
        Returns when every fault has been injected and, in the full run, ``done`` is set."""
        tasks = [self._one_offs()]
        if "kill" in self.faults and not self.short:
            tasks.append(self._kill_loop(done))
        await asyncio.gather(*tasks)

    async def _one_offs(self) -> None:
        """In ONE_OFF_AT's order, each at its time or once the one before is over."""
        for name, fraction in sorted(ONE_OFF_AT.items(), key=lambda item: item[1]):
            if name in self.faults and (name != "kill" or self.short):
                await asyncio.sleep(max(0.0, self.t0 + fraction * self.window - time.monotonic()))
                await self._one_off(name)

    async def _one_off(self, name: str) -> None:
        if name in ("kill", "double"):
            await self.kill(1 if name == "kill" else 2)
        elif name == "broker":
            await self._restart(name, self.servers.restart_broker)
        else:
            await self._restart(name, self.servers.restart_redis)

    async def _kill_loop(self, done: asyncio.Event) -> None:
        while not done.is_set():
            try:
                async with asyncio.timeout(self.rng.uniform(*KILL_INTERVAL)):
                    await done.wait()
                return
            except TimeoutError:
                await self.kill(1)

    async def kill(self, count: int) -> None:
        """kill -9 ``count`` random services at the same moment, then start them again
        (each start bounded: the harness waits for its "started" line)."""
        async with self._kills:
            victims = self.rng.sample(SERVICES, count)
            self._note("kill -9 " + " + ".join(victims))
            await asyncio.gather(*(self.processes.kill9(name) for name in victims))
            self.injected["kill" if count == 1 else "double"] += 1
            for name in victims:
                await self.processes.start(name)

    async def revive(self) -> list[str]:
        """Start again every service that exited without being killed here (each such exit
        is a crash, counted in ``crashed``); the names."""
        async with self._kills:
            exited = [n for n, c in self.processes.children.items() if c.returncode is not None]
            for name in exited:
                code = self.processes.children.pop(name).returncode
                self._note(f"{name} exited on its own (code {code}); starting it again")
                self.crashed.append(name)
                await self.processes.start(name)
            return exited

    async def _restart(self, name: str, restart: Callable[[], Awaitable[None]]) -> None:
        self._note(f"restart {'RabbitMQ' if name == 'broker' else 'Redis (emptied)'}")
        await restart()
        self.injected[name] += 1
        self._note(f"{'RabbitMQ' if name == 'broker' else 'Redis'} is back")

    def _note(self, what: str) -> None:
        line = f"{time.monotonic() - self.t0:7.1f}s  {what}"
        self.timeline.append(line)
        log.info("%s", line)
