"""The issue-14 matrix: every workload in services mode, one after another, as one
Markdown table next to upstream's floors (``ops/bench/matrix.py`` runs :func:`main`).

    .venv/bin/python ops/bench/matrix.py [--out FILE] [--scale F] [--only NAMES]

Each row is one ``ksched bench WORKLOAD --mode services --nodes N ...`` subprocess; its
last stdout line (the JSON report) is parsed and its figures go in the table (with
bench.cpu's: the projected ceiling beside pods/s, the cycle's CPU per pod, the total,
their ratio, and the informer's and the queue's CPU per pod over the cycle's). Before the
rows, ``ksched bench SchedulingBasic --mode cycle`` (CALIBRATION) measures the machine:
its pods/s labels every row, so that tables from machines of different speeds can be
read side by side (the same workload ran 1,352 to 5,377 pods/s on machines of one kind).
``--scale``
multiplies every row's node count (the pod counts follow, as ``ksched bench`` scales
them to ``--nodes``): 0.05 is a quick check, 1 the measurement. A run that fails is a
row saying so (the last line it wrote on stderr), and the script then exits 1.

SIGTERM (or Ctrl-C) stops the matrix where it is: the run under way gets SIGTERM in
turn (``ksched bench`` then stops its services and removes its namespace) and is a row
saying it was stopped, the rows not run yet say so, the table of what was measured is
written all the same, and the script exits 143 (130 for Ctrl-C).

Upstream's floors are the ``threshold:`` of the performance workload of the same size
in kubernetes/kubernetes ``test/integration/scheduler_perf/*/performance-config.yaml``
(pods/s that upstream's CI fails below; ``kube-scheduler`` measures them in one process,
with an in-process API server, scoring a sample of the nodes). Read from the files as
stored at these commits:

- ``misc/performance-config.yaml`` (008b3652): SchedulingBasic 5000Nodes_10000Pods 680,
  SchedulingDaemonset 15000Nodes 1100, SchedulingWithMixedChurn 5000Nodes_10000Pods 710,
  Unschedulable 5kNodes/100Init/10kPods 590, PreemptionAsync 5000Nodes 570;
  PreemptionBasic has no floor (its 5000-node case is disabled upstream, #108308, and
  the 1000Nodes one carries no threshold); the same figures are in
  ``default_preemption/performance-config.yaml`` (05606faf).
- ``topology_spreading/performance-config.yaml`` (05377107): TopologySpreading
  5000Nodes_5000Pods 460.
- ``affinity/performance-config.yaml``: the versions stored for this research were older
  (SchedulingNodeAffinity 220, SchedulingPodAntiAffinity 60, SchedulingPodAffinity 35,
  with the QueueingHints gates); the floors here, 540, 180 and 70, are the current ones
  as issue 14 quotes them, in line with the raised floors of the other files.
- GangScheduling is ksched's own (scheduler_perf has no PodGroups): no floor.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import json
import os
import platform
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

NONE: Final = "-"
"""A cell with nothing to show."""
RUN_TIMEOUT: Final = 3 * 3600.0
"""Seconds one ``ksched bench`` run may take (SchedulingDaemonset at 15000 nodes is
the longest)."""
CHUNK: Final = 1 << 16
"""Bytes of a run's stderr read at once (and kept, to find its last line)."""
STOP_GRACE: Final = 60.0
"""Seconds a stopped ``ksched bench`` run has to remove its namespace before it is
killed."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One row of the matrix: ``ksched bench workload --mode services --nodes N *args``."""

    name: str
    """The row's name (``--only`` takes these)."""
    workload: str
    nodes: int
    """Upstream's node count for the row (``--scale`` multiplies it)."""
    args: tuple[str, ...] = ()
    threshold: float | None = None
    """Upstream's floor in pods/s; None: none applies."""
    note: str = ""
    mode: str = "services"

    def argv(self, scale: float) -> list[str]:
        nodes = max(1, round(self.nodes * scale))
        return [self.workload, "--mode", self.mode, "--nodes", str(nodes), *self.args]


MATRIX: Final[tuple[Entry, ...]] = (
    Entry("SchedulingBasic", "SchedulingBasic", 5000, ("--vs-passthrough",), 680),
    Entry(
        "SchedulingBasic-rate500", "SchedulingBasic", 5000, ("--rate", "500"), None,
        "open loop at 500 pods/s: throughput is the rate; the goal is p99 <= 100 ms",
    ),
    Entry(
        "SchedulingBasic-rateAuto", "SchedulingBasic", 5000, ("--rate", "auto"), None,
        "open loop at half the saturation rate measured first: the goal is p99 <= 100 ms",
    ),
    Entry(
        "SchedulingBasic-noScheduledEvents", "SchedulingBasic", 5000,
        ("--no-scheduled-events",), 680,
        "the binder publishes no Scheduled Event per pod (a setting; upstream records one)",
    ),
    Entry("SchedulingNodeAffinity", "SchedulingNodeAffinity", 5000, (), 540),
    Entry("TopologySpreading", "TopologySpreading", 5000, (), 460),
    Entry("SchedulingPodAntiAffinity", "SchedulingPodAntiAffinity", 5000, (), 180),
    Entry("SchedulingPodAffinity", "SchedulingPodAffinity", 5000, (), 70),
    Entry("Unschedulable", "Unschedulable", 5000, (), 590),
    Entry("SchedulingWithMixedChurn", "SchedulingWithMixedChurn", 5000, (), 710),
    Entry("SchedulingDaemonset", "SchedulingDaemonset", 15000, (), 1100),
    Entry(
        "PreemptionBasic", "PreemptionBasic", 1000, (), None,
        "upstream has no floor for it",
    ),
    Entry("PreemptionAsync", "PreemptionAsync", 5000, (), 570),
    Entry("GangScheduling", "GangScheduling", 5000, (), None, "ksched's own: no upstream"),
    Entry("SchedulingBasic-replicas2", "SchedulingBasic", 5000, ("--replicas", "2"), 680),
    Entry(
        "SchedulingPodAntiAffinity-replicas2", "SchedulingPodAntiAffinity", 5000,
        ("--replicas", "2"), 180, "two replicas on pod-pod constraints: domain conflicts",
    ),
)  # fmt: skip
"""The matrix of issue 14, in the order it runs."""

CALIBRATION: Final = Entry("machine cycle", "SchedulingBasic", 5000, mode="cycle")
"""Run once before the matrix: the scheduling cycle alone on this machine. Its pods/s
labels every row (``machine cycle pods/s``), so that tables from machines of different
speeds can be compared: the CPU columns are ratios to the cycle, the rates are not."""

COLUMNS: Final = (
    "workload",
    "nodes",
    "pods",
    "pods/s",
    "projected ceiling pods/s",
    "upstream floor",
    "above floor",
    "p50 ms",
    "p99 ms",
    "messages/pod",
    "max RSS/process MB",
    "cycle CPU ms/pod",
    "CPU ms/pod",
    "CPU/cycle",
    "informer/cycle",
    "queue/cycle",
    "notes",
    "revision",
    "machine cycle pods/s",
)
"""The table's columns (the last one is the CALIBRATION run's rate); the CPU ones are
bench.cpu's: ``cycle_cpu_ms_per_pod``,
``cpu_ms_per_pod_total``, ``cpu_ratio_to_cycle``, the informer's and the queue's CPU per
pod over the cycle's, and ``projected_ceiling_pods_per_s`` beside the measured rate."""
LEFT: Final = ("workload", "notes")
"""The columns aligned left."""


STOPPED: Final = "stopped (SIGTERM or Ctrl-C); the table holds the rows measured before"
"""Why a row of a stopped matrix has no figures."""


class MatrixError(Exception):
    """Bad input to the script (exit 2, one line naming the flag)."""


class RunFailed(Exception):
    """A ``ksched bench`` run that gave no report."""


@dataclass(slots=True)
class Result:
    entry: Entry
    report: dict[str, Any] | None = None
    error: str | None = None
    """Why there is no report."""


def parse_report(stdout: str) -> dict[str, Any]:
    """The JSON object on the last non-empty line ``ksched bench`` printed."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise RunFailed("no output")
    try:
        report = json.loads(lines[-1])
    except json.JSONDecodeError as error:
        raise RunFailed(f"the last line is not JSON: {lines[-1][:120]!r} ({error.msg})") from None
    if not isinstance(report, dict):
        raise RunFailed(f"the last line is not a JSON object: {lines[-1][:120]!r}")
    return report


def _number(value: Any, digits: int = 1) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return NONE
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def _max_rss(report: dict[str, Any]) -> str:
    """The largest peak RSS of a ksched process (``bench``, the client, left out), and
    which process; ``max_rss_mb`` when there is no breakdown."""
    peaks = report.get("peak_rss_mb")
    if isinstance(peaks, dict):
        known = {
            name: mb
            for name, mb in peaks.items()
            if name != "bench" and isinstance(mb, int | float)
        }
        if known:
            name = max(known, key=lambda n: known[n])
            return f"{known[name]:.1f} ({name})"
    return _number(report.get("max_rss_mb"))


def _to_cycle(report: dict[str, Any], role: str) -> str:
    """``role``'s CPU per pod over the cycle's (``-`` without both)."""
    per_pod, cycle = report.get("cpu_ms_per_pod"), report.get("cycle_cpu_ms_per_pod")
    if not isinstance(per_pod, dict) or not isinstance(cycle, int | float) or cycle <= 0:
        return NONE
    ms = per_pod.get(role)
    return _number(ms / cycle) if isinstance(ms, int | float) else NONE


def _notes(entry: Entry, report: dict[str, Any]) -> str:
    notes = [entry.note] if entry.note else []
    if "saturation_pods_per_s" in report:
        notes.append(
            f"saturation {_number(report['saturation_pods_per_s'])} pods/s, "
            f"run at {_number(report.get('rate'))}"
        )
    absent = report.get("cpu_absent")
    if isinstance(absent, dict) and absent:
        notes.append(f"CPU not read: {', '.join(sorted(absent))}")
    if "ratio_to_passthrough" in report:
        ceiling = _number(report.get("passthrough_pods_per_second"))
        notes.append(f"Passthrough {ceiling} pods/s, ratio {report['ratio_to_passthrough']}")
    if report.get("replicas", 1) != 1:
        notes.append(
            f"{report['replicas']} replicas: {report.get('assume_conflicts', 0)} assume, "
            f"{report.get('domain_conflicts', 0)} domain conflicts, "
            f"{report.get('violations', '?')} violations"
        )
    if "churn_events" in report:
        notes.append(f"{report['churn_events']} churn events")
    return "; ".join(notes)


def above_floor(entry: Entry, report: dict[str, Any]) -> str:
    """``yes`` / ``no`` against the row's floor; ``n/a`` without one."""
    speed = report.get("pods_per_second")
    if entry.threshold is None or not isinstance(speed, int | float):
        return "n/a"
    return "yes" if speed >= entry.threshold else "no"


def row(result: Result, cycle_rate: float | None = None) -> list[str]:
    """``result`` as the table's cells; ``cycle_rate``: this machine's cycle pods/s."""
    entry = result.entry
    floor = NONE if entry.threshold is None else f"{entry.threshold:g}"
    if result.report is None:
        why = result.error or "no report"
        failed = why if STOPPED in why else f"failed: {why}"
        cells = dict.fromkeys(COLUMNS, NONE)
        cells.update({"workload": entry.name, "upstream floor": floor, "above floor": "n/a"})
        cells["notes"] = failed
        cells["machine cycle pods/s"] = _number(cycle_rate)
        return list(cells.values())
    report = result.report
    return [
        entry.name,
        _number(report.get("nodes")),
        _number(report.get("pods")),
        _number(report.get("pods_per_second")),
        _number(report.get("projected_ceiling_pods_per_s")),
        floor,
        above_floor(entry, report),
        _number(report.get("p50_ms")),
        _number(report.get("p99_ms")),
        _number(report.get("messages_per_pod"), 2),
        _max_rss(report),
        _number(report.get("cycle_cpu_ms_per_pod"), 3),
        _number(report.get("cpu_ms_per_pod_total"), 3),
        _number(report.get("cpu_ratio_to_cycle")),
        _to_cycle(report, "informer"),
        _to_cycle(report, "queue"),
        _notes(entry, report),
        str(report.get("revision", NONE)),
        _number(cycle_rate),
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(results: Sequence[Result], cycle_rate: float | None = None) -> str:
    """The Markdown table of ``results``, one row each, in order."""
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" if c in LEFT else "---:" for c in COLUMNS) + "|",
    ]
    for result in results:
        lines.append("| " + " | ".join(_cell(c) for c in row(result, cycle_rate)) + " |")
    return "\n".join(lines) + "\n"


def document(
    results: Sequence[Result], scale: float, machine: str, calibration: Result | None = None
) -> str:
    """The table with a line saying how it was measured (and the machine's cycle rate,
    ``calibration``: the CALIBRATION run)."""
    revisions = sorted({str(r.report.get("revision")) for r in results if r.report})
    cycle_rate = _cycle_rate(calibration)
    if calibration is None:
        speed = ""
    elif cycle_rate is None:
        speed = f" The machine's cycle rate was not measured ({calibration.error})."
    else:
        speed = (
            f" The machine's cycle rate: {_number(cycle_rate)} pods/s (`ksched bench "
            f"{' '.join(calibration.entry.argv(scale))}`)."
        )
    head = (
        f"Measured by `ops/bench/matrix.py --scale {scale:g}` (services mode: every service "
        f"a process on RabbitMQ and Redis; publish → Binding) on {machine}; revision "
        f"{', '.join(revisions) or 'unknown'}. Floors: upstream scheduler_perf's "
        f"`threshold` (see bench/matrix.py).{speed}\n\n"
    )
    return head + table(results, cycle_rate)


def _cycle_rate(calibration: Result | None) -> float | None:
    if calibration is None or calibration.report is None:
        return None
    rate = calibration.report.get("pods_per_second")
    return float(rate) if isinstance(rate, int | float) and not isinstance(rate, bool) else None


def machine() -> str:
    """CPUs and their model, from ``/proc/cpuinfo`` where there is one."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model})"


Runner = Callable[[list[str]], Awaitable[tuple[int, str, str]]]
"""Run ``ksched bench`` with these arguments: (exit code, stdout, last stderr line)."""


def ksched_command() -> list[str]:
    """``ksched`` beside this interpreter (the venv's), else ``python -m
    services.cli.main``."""
    beside = Path(sys.executable).with_name("ksched")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("ksched")
    return [found] if found else [sys.executable, "-m", "services.cli.main"]


async def run_bench(args: list[str]) -> tuple[int, str, str]:
    """``ksched bench *args`` as a subprocess, its stderr passed on to ours as it
    comes. Cancelled, it sends the run SIGTERM and waits for it (at most
    STOP_GRACE seconds, then kills it) before it lets the cancellation through."""
    process = await asyncio.create_subprocess_exec(
        *ksched_command(), "bench", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    tail = ""

    async def forward(stderr: asyncio.StreamReader) -> None:
        nonlocal tail
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while chunk := await stderr.read(CHUNK):
            text = decoder.decode(chunk)
            sys.stderr.write(text)
            sys.stderr.flush()
            tail = (tail + text)[-CHUNK:]

    try:
        async with asyncio.timeout(RUN_TIMEOUT):
            out, _ = await asyncio.gather(process.stdout.read(), forward(process.stderr))
            await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()
        return -9, "", f"no report within {RUN_TIMEOUT:g} s"
    except asyncio.CancelledError:
        await _terminate(process, forward(process.stderr), process.stdout.read())
        raise
    last = next((line.strip() for line in reversed(tail.splitlines()) if line.strip()), "")
    return process.returncode or 0, out.decode("utf-8", "replace"), last


async def _terminate(process: asyncio.subprocess.Process, *drains: Awaitable[object]) -> None:
    """SIGTERM to a run, then wait for it to clean up, reading its output (``drains``)
    meanwhile; killed after STOP_GRACE seconds."""
    if process.returncode is None:
        process.terminate()
    try:
        async with asyncio.timeout(STOP_GRACE):
            await asyncio.gather(*drains, process.wait())
    except TimeoutError:
        process.kill()
        await process.wait()


async def run_matrix(
    entries: Sequence[Entry],
    scale: float,
    runner: Runner = run_bench,
    stop: asyncio.Event | None = None,
) -> list[Result]:
    """Every entry, one after the other. Once ``stop`` is set, the run under way is
    cancelled (the runner stops it) and no other starts; their rows say why."""
    stop = stop or asyncio.Event()
    return [await run_one(entry, scale, runner, stop) for entry in entries]


async def run_one(entry: Entry, scale: float, runner: Runner, stop: asyncio.Event) -> Result:
    """One ``ksched bench`` run (none once ``stop`` is set; cancelled when it is)."""
    result = Result(entry)
    if stop.is_set():
        result.error = f"not run: {STOPPED}"
        return result
    argv = entry.argv(scale)
    print(f"matrix: ksched bench {' '.join(argv)}", file=sys.stderr, flush=True)
    run = asyncio.ensure_future(runner(argv))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([run, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not run.done():
        run.cancel()
        await asyncio.wait([run])
        result.error = STOPPED
        return result
    code, out, last = run.result()
    try:
        result.report = parse_report(out)
        if code != 0:
            raise RunFailed(f"exit {code}")
    except RunFailed as error:
        result.report = None
        result.error = f"exit {code}: {last}" if code != 0 and last else str(error)
    if result.report is not None:
        print(json.dumps(result.report), file=sys.stderr, flush=True)
    return result


@dataclass(frozen=True, slots=True)
class Options:
    out: Path | None
    scale: float
    entries: tuple[Entry, ...] = field(default=MATRIX)


def options(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="ops/bench/matrix.py",
        description="Run the issue-14 matrix (services mode) and write a Markdown table.",
    )
    parser.add_argument("--out", help="write the Markdown here (default: standard output)")
    parser.add_argument(
        "--scale", default="1", help="multiply every row's nodes (and so pods) by F (default 1)"
    )
    parser.add_argument(
        "--only", help="comma-separated row names: " + ", ".join(e.name for e in MATRIX)
    )
    args = parser.parse_args(argv)
    try:
        scale = float(args.scale)
    except ValueError:
        scale = 0.0
    if not 0 < scale <= 10:
        raise MatrixError(f"--scale: {args.scale!r}: a factor above 0 and at most 10")
    entries: tuple[Entry, ...] = MATRIX
    if args.only is not None:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        by_name = {e.name: e for e in MATRIX}
        unknown = [n for n in names if n not in by_name]
        if unknown or not names:
            raise MatrixError(
                f"--only: no row named {', '.join(map(repr, unknown)) or 'at all'} "
                f"(rows: {', '.join(by_name)})"
            )
        entries = tuple(e for e in MATRIX if e.name in names)
    out = Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():
        raise MatrixError(f"--out: {args.out}: no directory {str(out.parent)!r} to write it in")
    return Options(out, scale, entries)


def main(argv: Sequence[str] | None = None, runner: Runner = run_bench) -> int:
    """Run the matrix; 0 when every run gave its report, 1 when one failed, 2 on bad
    flags, 128 + the signal when SIGTERM or Ctrl-C stopped it (the table is written)."""
    try:
        chosen = options(argv)
    except MatrixError as error:
        print(f"matrix.py: {error}", file=sys.stderr)
        return 2
    stopped_by: list[signal.Signals] = []

    async def measure() -> tuple[Result, list[Result]]:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):

            def on_signal(signum: signal.Signals = signum) -> None:
                if stop.is_set():  # a second one: end at once
                    os._exit(128 + signum)
                print(f"matrix: {signum.name}: {STOPPED}", file=sys.stderr, flush=True)
                stopped_by.append(signum)
                stop.set()

            loop.add_signal_handler(signum, on_signal)
        try:
            calibration = await run_one(CALIBRATION, chosen.scale, runner, stop)
            return calibration, await run_matrix(chosen.entries, chosen.scale, runner, stop)
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)

    calibration, results = asyncio.run(measure())
    text = document(results, chosen.scale, machine(), calibration)
    if chosen.out is None:
        sys.stdout.write(text)
    else:
        chosen.out.write_text(text)
        print(f"matrix: wrote {chosen.out}", file=sys.stderr)
    if stopped_by:
        return 128 + stopped_by[0]
    return 1 if any(r.report is None for r in (calibration, *results)) else 0


__all__ = ["CALIBRATION", "MATRIX", "Entry", "Result", "main", "parse_report", "row", "table"]
