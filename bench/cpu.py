"""CPU per measured pod, by process: what each pod costs the whole pipeline, set against
the scheduling cycle's own cost (issue 34).

Method (``--mode services``, and Passthrough): each process's CPU time (user + system,
every thread: ``utime`` + ``stime`` of ``/proc/<pid>/stat``; the bench client's own
``time.process_time()``) is read four times. Once the services are ready and quiet, a
*baseline* window of :data:`BASELINE_SECONDS` with no pods gives each process's idle
rate (heartbeats, timers, the broker's and Redis's housekeeping); the *measured* window
runs from the first measured pod's publish until the processes are quiet again after
the last decision (bench.scrape's settle, a few ``/metrics`` scrapes). A process's CPU
per pod is its growth over the measured window less its idle rate times that window's
length, clamped at 0, over the measured pods done (:func:`per_pod_ms`).

The processes: each service the bench starts, ``bench`` (the client: it publishes the
watch events and reads the decisions), ``rabbitmq`` (the OS process of the broker the
AMQP URL names: the one listening on its port on this host, :func:`broker_pid`) and
``redis`` (``INFO server``'s ``process_id``, checked to be a ``redis-server`` here,
:func:`redis_pid`). One that cannot be read (on another host, in another PID namespace,
another user's) is left out of ``cpu_ms_per_pod`` and named with the reason in
``cpu_absent``.

The cycle's own CPU per pod is the growth of the schedulers'
``ksched_scheduling_cycle_cpu_seconds_total`` (the thread CPU time inside
``schedule_pod``) over the measured pods; ``cpu_ratio_to_cycle`` is the total over it.
The projected ceiling, ``1000 / max(cpu_ms_per_pod of the single-instance roles)`` pods/s
(the informer, the log's one writer, and the queue), is the rate at which the busiest
of them would fill one core of its own, with the broker and Redis not the bottleneck.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

BASELINE_SECONDS: Final = 1.0
"""The idle window before the measured one: long enough for a few 10 ms clock ticks of
each process's housekeeping, short beside a measurement."""
SINGLE_INSTANCE: Final = ("informer", "queue")
"""The roles that run one active instance however many replicas there are (the event
log's writer and the queue): the projected ceiling's."""
PROC: Final = Path("/proc")
LOCAL_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
LISTEN: Final = "0A"
"""A listening socket's state in ``/proc/net/tcp``."""

Reader = Callable[[], float | None]
"""A process's CPU seconds so far; None when it cannot be read (any longer)."""
Readings = dict[str, float | None]
Info = Callable[[], Awaitable[Mapping[str, object]]]
"""Redis's ``INFO server`` section."""


def stat_cpu_seconds(stat: str, ticks: int) -> float:
    """``utime`` + ``stime`` of a ``/proc/<pid>/stat`` line, in seconds (``ticks`` per
    second: ``SC_CLK_TCK``). The command name, in parentheses, may hold spaces and
    parentheses itself: the fields are counted after the last ``)``."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks


def proc_reader(pid: int, proc: Path = PROC) -> Reader:
    """Reads process ``pid``'s CPU seconds from ``/proc``."""
    ticks = os.sysconf("SC_CLK_TCK")
    path = proc / str(pid) / "stat"

    def read() -> float | None:
        try:
            return stat_cpu_seconds(path.read_text(), ticks)
        except (OSError, ValueError, IndexError):
            return None

    return read


def own_reader() -> Reader:
    """This process's CPU seconds (every thread)."""
    return time.process_time


@dataclass(frozen=True, slots=True)
class Sample:
    """Every process's CPU seconds at one moment (``at``: monotonic seconds)."""

    at: float
    cpu: Readings


class Probe:
    """The processes whose CPU is read, and those that cannot be (name → why)."""

    def __init__(
        self,
        readers: Mapping[str, Reader],
        absent: Mapping[str, str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.readers = dict(readers)
        self.absent = dict(absent or {})
        self._clock = clock

    def sample(self) -> Sample:
        return Sample(self._clock(), {name: read() for name, read in self.readers.items()})

    async def baseline(
        self,
        seconds: float = BASELINE_SECONDS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> tuple[Sample, Sample]:
        """Two samples ``seconds`` apart, with nothing published meanwhile."""
        first = self.sample()
        await sleep(seconds)
        return first, self.sample()


def per_pod_ms(
    baseline: tuple[Sample, Sample],
    measured: tuple[Sample, Sample],
    pods: int,
) -> tuple[dict[str, float], dict[str, str]]:
    """Each process's CPU ms per pod over the ``measured`` window, less its idle rate
    over the ``baseline`` window scaled to the measured window's length, clamped at 0;
    and the processes with a reading missing (name → why)."""
    idle_length = baseline[1].at - baseline[0].at
    length = measured[1].at - measured[0].at
    out: dict[str, float] = {}
    missing: dict[str, str] = {}
    for name in measured[1].cpu:
        values = [s.cpu.get(name) for s in (*baseline, *measured)]
        known = [v for v in values if v is not None]
        if len(known) < len(values):
            missing[name] = "its CPU time could not be read during the run (it ended?)"
            continue
        idle0, idle1, start, end = known
        idle_rate = (idle1 - idle0) / idle_length if idle_length > 0 else 0.0
        used = max(0.0, (end - start) - idle_rate * length)
        out[name] = used * 1000 / pods if pods else 0.0
    return out, missing


def projected_ceiling(per_pod: Mapping[str, float], roles: Sequence[str]) -> float | None:
    """Pods per second at which the busiest of ``roles`` fills one core:
    ``1000 / max(ms per pod)``; None when none of them was measured, or used no CPU."""
    costs = [per_pod[role] for role in roles if role in per_pod]
    busiest = max(costs, default=0.0)
    return round(1000 / busiest, 1) if busiest > 0 else None


def figures(
    per_pod: Mapping[str, float],
    absent: Mapping[str, str],
    cycle_ms: float | None = None,
    roles: Sequence[str] = (),
) -> dict[str, object]:
    """The report's CPU fields: ``cpu_ms_per_pod`` (process → ms), its
    ``cpu_ms_per_pod_total``, ``cpu_absent`` (process → why, when any), and, given the
    cycle's CPU per pod, ``cycle_cpu_ms_per_pod`` and ``cpu_ratio_to_cycle``; given the
    single-instance ``roles``, ``projected_ceiling_pods_per_s``. The ratio and the
    ceiling are taken from the figures as reported (3 decimals), so that a reader who
    divides the printed numbers gets the printed ratio."""
    shown = {name: round(ms, 3) for name, ms in per_pod.items()}
    total = round(sum(per_pod.values()), 3)
    out: dict[str, object] = {"cpu_ms_per_pod": shown, "cpu_ms_per_pod_total": total}
    if absent:
        out["cpu_absent"] = dict(absent)
    if cycle_ms is not None:
        cycle = round(cycle_ms, 3)
        out["cycle_cpu_ms_per_pod"] = cycle
        out["cpu_ratio_to_cycle"] = round(total / cycle, 1) if cycle > 0 else None
    if roles:
        out["projected_ceiling_pods_per_s"] = projected_ceiling(shown, roles)
    return out


def table(report: Mapping[str, object]) -> list[str]:
    """The CPU figures of ``report`` as lines for a person (the bench prints them on
    stderr): one per process, the total, the cycle's and the projected ceiling beside
    the measured rate."""
    per_pod = report.get("cpu_ms_per_pod")
    if not isinstance(per_pod, dict):
        return []
    absent = report.get("cpu_absent")
    absent = absent if isinstance(absent, dict) else {}
    lines = ["CPU ms per pod (measured window less the idle baseline):"]
    width = max(len(str(n)) for n in [*per_pod, *absent, "total"])
    lines += [f"  {name:<{width}}  {ms:9.3f}" for name, ms in per_pod.items()]
    lines += [f"  {name:<{width}}  absent: {why}" for name, why in absent.items()]
    lines.append(f"  {'total':<{width}}  {report['cpu_ms_per_pod_total']:9.3f}")
    if "cycle_cpu_ms_per_pod" in report:
        lines.append(
            f"cycle (schedule_pod) {report['cycle_cpu_ms_per_pod']} ms per pod; "
            f"whole pipeline / cycle: {report.get('cpu_ratio_to_cycle')}"
        )
    if "projected_ceiling_pods_per_s" in report:
        lines.append(
            f"projected ceiling {report['projected_ceiling_pods_per_s']} pods/s "
            f"(1 / max CPU per pod of {', '.join(SINGLE_INSTANCE)}, each on its own core); "
            f"measured {report.get('pods_per_second')} pods/s"
        )
    return lines


# -- finding the broker's and Redis's processes ------------------------------------------


def listening_inodes(table_text: str, port: int) -> set[int]:
    """The socket inodes listening on TCP ``port`` in a ``/proc/net/tcp`` (or ``tcp6``)
    table."""
    inodes = set()
    for line in table_text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        if int(fields[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(int(fields[9]))
    return inodes


def socket_owner(inodes: set[int], proc: Path = PROC) -> tuple[int | None, bool]:
    """The process holding one of the sockets ``inodes``, and whether some process's
    descriptors could not be read (another user's: it may be that one)."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    hidden = False
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in wanted:
                    return int(entry.name), hidden
        except PermissionError:
            hidden = True
        except OSError:
            continue
    return None, hidden


def command_line(pid: int, proc: Path = PROC) -> str:
    try:
        return (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def process_name(pid: int, proc: Path = PROC) -> str:
    try:
        return (proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def rabbit_nodes(proc: Path = PROC) -> list[int]:
    """The RabbitMQ nodes running here: ``beam.smp`` processes whose command line names
    rabbit."""
    return [
        int(entry.name)
        for entry in proc.iterdir()
        if entry.name.isdigit()
        and process_name(int(entry.name), proc) == "beam.smp"
        and "rabbit" in command_line(int(entry.name), proc)
    ]


def broker_pid(amqp_url: str, proc: Path = PROC) -> tuple[int | None, str]:
    """The pid of the RabbitMQ node the (first) AMQP URL names, or None and why: the
    ``beam.smp`` process listening on its port here; where the listeners' descriptors
    cannot be read, the one RabbitMQ node running here, if there is one only."""
    parts = urlsplit(amqp_url.split(",")[0].strip())
    host = parts.hostname or "localhost"
    if host not in LOCAL_HOSTS:
        return None, f"the broker is on {host}, not this host"
    port = parts.port or (5671 if parts.scheme == "amqps" else 5672)
    inodes: set[int] = set()
    for name in ("tcp", "tcp6"):
        try:
            inodes |= listening_inodes((proc / "net" / name).read_text(), port)
        except OSError:
            continue
    pid, hidden = socket_owner(inodes, proc) if inodes else (None, False)
    if pid is not None:
        comm = process_name(pid, proc)
        if comm != "beam.smp":
            return None, f"port {port} is served by {comm or '?'} (pid {pid}), not a RabbitMQ node"
        return pid, ""
    nodes = rabbit_nodes(proc)
    if hidden and len(nodes) == 1:
        return nodes[0], ""
    if not inodes:
        return None, f"nothing listens on port {port} here (a container's port?)"
    return None, (
        f"the process listening on port {port} could not be found "
        f"({len(nodes)} RabbitMQ nodes here; another user's descriptors are not readable)"
    )


async def redis_pid(info: Info, proc: Path = PROC) -> tuple[int | None, str]:
    """The pid ``INFO server`` gives (``info``: that section), or None and why: it must
    be a ``redis-server`` on this host (it is not when Redis runs elsewhere or in a
    container, which has its own PIDs)."""
    try:
        pid = int(str((await info())["process_id"]))
    except Exception as error:  # reported: Redis's CPU is then absent
        return None, f"INFO server gave no process_id ({error})"
    if not process_name(pid, proc).startswith("redis-server"):
        return None, (
            f"INFO gives process_id {pid}, not a redis-server on this host "
            "(another host or a container)"
        )
    return pid, ""


async def probe_for(
    children: Mapping[str, int],
    amqp_url: str,
    info: Info | None,
) -> Probe:
    """The readers of a services-mode run: ``children`` (name → pid), the bench client,
    the broker and, with ``info`` (Redis's ``INFO server``), Redis."""
    readers: dict[str, Reader] = {name: proc_reader(pid) for name, pid in children.items()}
    readers["bench"] = own_reader()
    absent: dict[str, str] = {}
    found: Iterable[tuple[str, tuple[int | None, str]]] = [("rabbitmq", broker_pid(amqp_url))]
    if info is not None:
        found = [*found, ("redis", await redis_pid(info))]
    for name, (pid, why) in found:
        if pid is None:
            absent[name] = why
        else:
            readers[name] = proc_reader(pid)
    return Probe(readers, absent)


__all__ = [
    "BASELINE_SECONDS",
    "SINGLE_INSTANCE",
    "Info",
    "Probe",
    "Sample",
    "broker_pid",
    "figures",
    "listening_inodes",
    "per_pod_ms",
    "probe_for",
    "projected_ceiling",
    "redis_pid",
    "stat_cpu_seconds",
    "table",
]
