"""What the HA mode of the chaos run (``ops/chaos --ha``) does, on a seeded timeline.

Faults (``--faults``, all by default), each once, one after the other at a fixed
fraction of the publishing window (:data:`AT`) or once the one before is over:

- ``leader-kill``: SIGKILL each role's leader (informer, queue, descheduler; read from
  ``ksched leases -o json``), in a seeded order; the standby must take the lease within
  a lease duration or two; the killed replica is started again.
- ``rabbit-leader``: SIGKILL the RabbitMQ node that leads the event log's stream (else
  the most queues), wait until other nodes lead them, start it again.
- ``sentinel-failover``: ``SENTINEL FAILOVER``: the replica becomes the master.
- ``leader-stop``: SIGSTOP one role's leader (seeded) for twice its lease, then SIGCONT:
  the deposed leader wakes up, must not write, and exits (it is started again; such an
  exit is expected, not a crash).
- ``redis-kill``: SIGKILL the Redis master; the Sentinels promote the replica; the old
  master comes back empty as a replica.
- ``second-informer``: start a third informer against the same log; it runs to the end.

The times from each leader's death to the new leader and to the next Binding the
client receives are measured (:attr:`HAChaos.failovers`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ops.ha.rabbit_cluster import RabbitCluster, RabbitNode
from ops.ha.redis_sentinel import RedisSentinel
from tests.chaos.ha_processes import ROLES, HAProcesses

HA_FAULTS = (
    "leader-kill",
    "rabbit-leader",
    "sentinel-failover",
    "leader-stop",
    "redis-kill",
    "second-informer",
)
AT = {
    "leader-kill": 0.1,
    "rabbit-leader": 0.25,
    "sentinel-failover": 0.4,
    "leader-stop": 0.55,
    "redis-kill": 0.7,
    "second-informer": 0.85,
}
"""When each fault fires, as a fraction of the publishing window."""
FAILOVER_TIMEOUT = 60.0
"""Seconds a failover (a new lease holder, a new queue leader, a new Redis master) may
take before the run calls it failed."""

log = logging.getLogger("chaos.ha")


@dataclass
class HAChaos:
    processes: HAProcesses
    rabbit: RabbitCluster
    redis: RedisSentinel
    rng: Any
    faults: frozenset[str]
    window: float
    lease_seconds: float
    bound: Callable[[], int]
    """How many pods the client has a Binding for now."""
    total: int
    """How many pods are published in all."""
    stream: str
    """The event log's stream (its queue name)."""
    injected: Counter[str] = field(default_factory=Counter)
    timeline: list[str] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    failovers: list[tuple[str, float, float | None]] = field(default_factory=list)
    """(role, seconds to a new leader, seconds to the next Binding) per leader killed."""
    t0: float = field(default_factory=time.monotonic)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _expected: set[str] = field(default_factory=set)
    """Replicas whose next exit is expected (a deposed leader)."""

    def restart_clock(self) -> None:
        self.t0 = time.monotonic()

    async def run(self, done: asyncio.Event) -> None:
        del done  # every fault fires once; nothing repeats until the end
        for name in sorted(self.faults, key=AT.__getitem__):
            await asyncio.sleep(max(0.0, self.t0 + AT[name] * self.window - time.monotonic()))
            async with self._lock:
                await getattr(self, "_" + name.replace("-", "_"))()
            self.injected[name] += 1

    async def revive(self) -> list[str]:
        """Start again every replica that exited on its own (a crash, unless it was a
        deposed leader or logged that it lost its lease); the names."""
        async with self._lock:
            exited = self.processes.exited()
            for key, code in exited.items():
                if key in self._expected:
                    self._expected.discard(key)
                    self._note(
                        f"{key} exited (code {code}) after losing its lease; starting it again"
                    )
                elif code == 1 and self.processes.lost_lease(key):
                    # A term that ended in a failover (the lease's write was lost with
                    # the old Redis master): the process exits as kube-scheduler does.
                    self._note(f"{key} exited (code 1): leaderelection lost; starting it again")
                else:
                    last = self.processes.last_words(key)
                    self._note(f"{key} exited on its own (code {code}: {last}); starting it again")
                    self.crashed.append(key)
                await self.processes.start_replica(key)
            return list(exited)

    # ---- the faults ------------------------------------------------------------------

    async def _leader_kill(self) -> None:
        for role in self.rng.sample(ROLES, len(ROLES)):
            key = await self.processes.leader(role)
            self._note(f"SIGKILL the {role} leader {key}")
            before = self.bound()
            killed = time.monotonic()
            await self.processes.kill9(key)
            new = await self.processes.new_leader(role, key, FAILOVER_TIMEOUT)
            elected = time.monotonic() - killed
            binding = await self._next_binding(before, killed)
            self.failovers.append((role, elected, binding))
            after = (
                f"{binding:.1f} s"
                if binding is not None
                else "none: every pod was bound already"
                if before >= self.total
                else f"none within {FAILOVER_TIMEOUT:g} s"
            )
            self._note(f"{new} leads {role} {elected:.1f} s after; the next Binding {after}")
            await self.processes.start_replica(key)

    async def _leader_stop(self) -> None:
        role = self.rng.choice(ROLES)
        key = await self.processes.leader(role)
        pause = 2 * self.lease_seconds
        self._note(
            f"SIGSTOP the {role} leader {key} for {pause:g} s (its lease: {self.lease_seconds:g} s)"
        )
        self._expected.add(key)
        self.processes.signal(key, signal.SIGSTOP)
        try:
            new = await self.processes.new_leader(role, key, FAILOVER_TIMEOUT)
            self._note(f"{new} leads {role} while {key} is stopped")
            await asyncio.sleep(max(0.0, pause - self.lease_seconds))
        finally:
            self.processes.signal(key, signal.SIGCONT)
        self._note(f"SIGCONT {key}")

    async def _rabbit_leader(self) -> None:
        victim = await asyncio.to_thread(self._leading_node)
        self._note(f"SIGKILL RabbitMQ node {victim.name} (leads the event log's stream)")
        await asyncio.to_thread(victim.kill)
        deadline = time.monotonic() + FAILOVER_TIMEOUT
        while victim.name in (await asyncio.to_thread(self.rabbit.leaders)).values():
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{victim.name} still leads queues {FAILOVER_TIMEOUT:g} s after its death"
                )
            await asyncio.sleep(0.5)
        self._note("other nodes lead every quorum queue and stream; starting the node again")
        await asyncio.to_thread(victim.start)
        self._note(f"{victim.name} is back")

    def _leading_node(self) -> RabbitNode:
        leaders = self.rabbit.leaders()
        if self.stream in leaders:
            return self.rabbit.node_named(leaders[self.stream])
        counts = Counter(leaders.values())
        if not counts:
            return self.rabbit.nodes[0]
        return self.rabbit.node_named(counts.most_common(1)[0][0])

    async def _sentinel_failover(self) -> None:
        old = await asyncio.to_thread(lambda: self.redis.master_port)
        self._note(f"SENTINEL FAILOVER (master on port {old})")
        new = await asyncio.to_thread(self.redis.failover)
        self._note(f"the replica on port {new} is the master")

    async def _redis_kill(self) -> None:
        old = await asyncio.to_thread(lambda: self.redis.master_port)
        self._note(f"SIGKILL the Redis master on port {old}")
        await asyncio.to_thread(self.redis.signal, old, signal.SIGKILL)
        deadline = time.monotonic() + FAILOVER_TIMEOUT
        while await asyncio.to_thread(lambda: self.redis.master_port) == old:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no Redis failover {FAILOVER_TIMEOUT:g} s after the master died"
                )
            await asyncio.sleep(0.2)
        new = await asyncio.to_thread(lambda: self.redis.master_port)
        self._note(f"the Sentinels promoted port {new}; the old master comes back empty")
        await asyncio.to_thread(self.redis.restart, old)

    async def _second_informer(self) -> None:
        self._note("start a second informer (informer-3) against the same log")
        await self.processes.start_replica("informer-3")

    async def _next_binding(self, before: int, since: float) -> float | None:
        """Seconds from ``since`` to the first Binding beyond ``before`` (None: none
        within FAILOVER_TIMEOUT, e.g. every pod was bound already)."""
        deadline = since + FAILOVER_TIMEOUT
        while self.bound() <= before:
            if before >= self.total:
                return None  # every pod was bound already
            if time.monotonic() > deadline:
                return None
            await asyncio.sleep(0.05)
        return time.monotonic() - since

    def _note(self, what: str) -> None:
        line = f"{time.monotonic() - self.t0:7.1f}s  {what}"
        self.timeline.append(line)
        log.info("%s", line)
