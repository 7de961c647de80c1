"""Reading the bench's service processes from outside: their ``/readyz`` and the
counters on their ``/metrics`` (each process runs with ``--metrics-port``).

``ksched bench --mode services`` (and Passthrough) counts the messages published to the
broker during the measurement from each process's own
``ksched_messages_published_total`` (every publish through the bus edge, by exchange;
services.common.observe), read once the services are ready and quiet before the
measurement and once they are quiet again after it. Counters read here are summed over
their label sets; a series a process does not export reads 0 (a counter another change
has not added yet, or a process that is not serving yet and so has published nothing).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from prometheus_client.parser import text_string_to_metric_families

PUBLISHED: Final = "ksched_messages_published_total"
"""Messages one process published, by exchange (services.common.observe)."""
CONSUMED: Final = "ksched_messages_consumed_total"
ASSUME_CONFLICTS: Final = "ksched_store_assume_conflicts_total"
"""Reservations the store refused a scheduler replica (services.scheduler.metrics)."""
DOMAIN_CONFLICTS: Final = "ksched_store_domain_conflicts_total"
"""Decisions refused because a pod-pod constraint's topology domain changed meanwhile
(when the scheduler exports it; else 0)."""
CYCLE_CPU: Final = "ksched_scheduling_cycle_cpu_seconds_total"
"""The scheduler's CPU seconds inside ``schedule_pod`` (services.scheduler.metrics):
the cycle's own CPU per pod (bench.cpu)."""
COUNTERS: Final = (PUBLISHED, CONSUMED, ASSUME_CONFLICTS, DOMAIN_CONFLICTS, CYCLE_CPU)

Fetch = Callable[[int, str], Awaitable[tuple[int, str]]]
"""GET ``path`` on 127.0.0.1:``port``: (status, body); raises OSError when nothing
answers."""
Sleep = Callable[[float], Awaitable[None]]
Counters = dict[str, dict[str, float]]
"""Process name → counter name → value."""


class BenchFailure(RuntimeError):
    """A service process the bench started did not come up (it exited, or never got
    ready)."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now (the kernel's choice;
    held together while chosen so that they differ)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


HTTP_TIMEOUT: Final = 5.0
"""Seconds one GET may take."""


async def http_get(port: int, path: str) -> tuple[int, str]:
    """A plain HTTP/1.0 GET of ``path`` on 127.0.0.1:``port``."""
    async with asyncio.timeout(HTTP_TIMEOUT):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            await writer.drain()
            response = await reader.read()
        finally:
            writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    status = int(status_line[1]) if len(status_line) > 1 and status_line[1].isdigit() else 0
    return status, body.decode("utf-8", "replace")


def totals(text: str, names: Iterable[str] = COUNTERS) -> dict[str, float]:
    """Each of ``names`` summed over its label sets in the exposition ``text``; 0 for
    a name ``text`` does not have."""
    wanted = dict.fromkeys(names, 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted:
                wanted[sample.name] += sample.value
    return wanted


def total(counters: Mapping[str, Mapping[str, float]], name: str) -> float:
    """``name`` summed over every process."""
    return sum(values.get(name, 0.0) for values in counters.values())


@dataclass
class Endpoints:
    """The metrics ports of the bench's processes, by process name."""

    ports: dict[str, int]
    fetch: Fetch = http_get
    sleep: Sleep = asyncio.sleep
    poll: float = 0.1
    """Seconds between two polls (of /readyz, or of the counters while settling)."""
    polls: dict[str, int] = field(default_factory=dict)
    """How many times each wait polled (for the tests)."""

    async def ready(
        self, alive: Callable[[str], int | None], *, within: float, path: str = "/readyz"
    ) -> None:
        """Until every process answers ``path`` with 200. ``alive(name)``: the exit code
        of a process that has ended (None while it runs): one that ends first, or one
        not ready after ``within`` seconds of polling, is a :class:`BenchFailure`."""
        waiting = dict(self.ports)
        rounds = max(1, round(within / self.poll))
        for _ in range(rounds):
            for name, port in list(waiting.items()):
                code = alive(name)
                if code is not None:
                    raise BenchFailure(
                        f"the {name} process exited with {code} before it was ready "
                        "(its log is above)"
                    )
                try:
                    status, _ = await self.fetch(port, path)
                except (OSError, TimeoutError):
                    continue
                if status == 200:
                    del waiting[name]
            self.polls["ready"] = self.polls.get("ready", 0) + 1
            if not waiting:
                return
            await self.sleep(self.poll)
        raise BenchFailure(
            f"not ready after {within:g} s: {', '.join(sorted(waiting))} (GET {path} on "
            f"port{'s' if len(waiting) > 1 else ''} {', '.join(map(str, waiting.values()))})"
        )

    async def counters(self) -> Counters:
        """Every process's :data:`COUNTERS` now; a process that does not answer reads 0."""
        out: Counters = {}
        for name, port in self.ports.items():
            try:
                status, body = await self.fetch(port, "/metrics")
            except (OSError, TimeoutError):
                status, body = 0, ""
            out[name] = totals(body if status == 200 else "")
        return out

    async def settled(self, *, quiet_polls: int = 3, within: float = 15.0) -> Counters:
        """The counters once the messages published by all the processes have not
        changed for ``quiet_polls`` polls in a row (what was in flight has landed), or,
        failing that, as they are after ``within`` seconds."""
        last = await self.counters()
        quiet = 0
        for _ in range(max(1, round(within / self.poll))):
            if quiet >= quiet_polls:
                break
            await self.sleep(self.poll)
            now = await self.counters()
            self.polls["settled"] = self.polls.get("settled", 0) + 1
            quiet = quiet + 1 if total(now, PUBLISHED) == total(last, PUBLISHED) else 0
            last = now
        return last


def delta(before: Counters, after: Counters, name: str) -> float:
    """How much ``name`` grew, summed over the processes."""
    return total(after, name) - total(before, name)


__all__ = [
    "ASSUME_CONFLICTS",
    "CONSUMED",
    "COUNTERS",
    "CYCLE_CPU",
    "DOMAIN_CONFLICTS",
    "PUBLISHED",
    "BenchFailure",
    "Endpoints",
    "delta",
    "free_ports",
    "http_get",
    "total",
    "totals",
]
