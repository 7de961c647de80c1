"""The issue-14 matrix script (bench.matrix, run as ops/bench/matrix.py): parsing a run's
last line, the Markdown rows against upstream's floors, scaling, and the flags' errors;
``ksched bench`` is a fake runner here (the integration test runs the real one)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from bench.matrix import (
    CALIBRATION,
    MATRIX,
    STOPPED,
    Entry,
    Result,
    RunFailed,
    document,
    main,
    parse_report,
    row,
    run_matrix,
    table,
)

BASIC = Entry("SchedulingBasic", "SchedulingBasic", 5000, ("--vs-passthrough",), 680)
REPLICAS = Entry("Basic2", "SchedulingBasic", 5000, ("--replicas", "2"), 680)
OWN = Entry("GangScheduling", "GangScheduling", 5000, (), None, "ksched's own: no upstream")
AUTO = Entry("Auto", "SchedulingBasic", 5000, ("--rate", "auto"))
NO_CPU = ["-"] * 5
"""The CPU cells of a report without CPU figures: cycle, total, ratio, informer and queue
over the cycle."""


def report(**fields: Any) -> dict[str, Any]:
    """A services-mode report with plausible figures, ``fields`` replacing them."""
    base: dict[str, Any] = {
        "workload": "SchedulingBasic",
        "mode": "services",
        "nodes": 5000,
        "init_pods": 1000,
        "pods": 10000,
        "pods_per_second": 700.0,
        "p50_ms": 12.34,
        "p99_ms": 45.6,
        "max_rss_mb": 300.0,
        "messages_per_pod": 3.1,
        "revision": "abc1234",
        "replicas": 1,
        "peak_rss_mb": {"informer": 120.0, "scheduler": 290.5, "bench": 400.0},
    }
    return {**base, **fields}


@pytest.mark.parametrize(
    ("entry", "result_report", "error", "expected"),
    [
        pytest.param(
            BASIC,
            report(passthrough_pods_per_second=2000.0, ratio_to_passthrough=0.35),
            None,
            ["SchedulingBasic", "5,000", "10,000", "700.0", "-", "680", "yes", "12.3", "45.6",
             "3.10", "290.5 (scheduler)", *NO_CPU, "Passthrough 2,000.0 pods/s, ratio 0.35",
             "abc1234", "-"],
            id="above-floor-with-passthrough",
        ),
        pytest.param(
            BASIC,
            report(pods_per_second=679.9),
            None,
            ["SchedulingBasic", "5,000", "10,000", "679.9", "-", "680", "no", "12.3", "45.6",
             "3.10", "290.5 (scheduler)", *NO_CPU, "", "abc1234", "-"],
            id="just-below-floor",
        ),
        pytest.param(
            REPLICAS,
            report(replicas=2, assume_conflicts=7, domain_conflicts=0, violations=0,
                   peak_rss_mb={"scheduler-sched-0": 200.0, "scheduler-sched-1": 210.0}),
            None,
            ["Basic2", "5,000", "10,000", "700.0", "-", "680", "yes", "12.3", "45.6", "3.10",
             "210.0 (scheduler-sched-1)", *NO_CPU,
             "2 replicas: 7 assume, 0 domain conflicts, 0 violations", "abc1234", "-"],
            id="replicas-and-conflicts",
        ),
        pytest.param(
            OWN,
            report(messages_per_pod=None, peak_rss_mb=None, churn_events=4),
            None,
            ["GangScheduling", "5,000", "10,000", "700.0", "-", "-", "n/a", "12.3", "45.6",
             "-", "300.0", *NO_CPU, "ksched's own: no upstream; 4 churn events", "abc1234", "-"],
            id="no-floor-no-broker-figures",
        ),
        pytest.param(
            BASIC,
            None,
            "exit 3: ksched bench: cannot connect to RabbitMQ",
            ["SchedulingBasic", "-", "-", "-", "-", "680", "n/a", "-", "-", "-", "-", *NO_CPU,
             "failed: exit 3: ksched bench: cannot connect to RabbitMQ", "-", "-"],
            id="failed-run",
        ),
        pytest.param(
            AUTO,
            report(
                pods_per_second=400.0, rate=400.0, saturation_pods_per_s=800.0,
                cpu_ms_per_pod={"informer": 0.5, "queue": 0.25, "scheduler": 1.5, "bench": 2.0},
                cpu_ms_per_pod_total=4.25, cycle_cpu_ms_per_pod=0.5, cpu_ratio_to_cycle=8.5,
                projected_ceiling_pods_per_s=2000.0, cpu_absent={"rabbitmq": "elsewhere"},
            ),
            None,
            ["Auto", "5,000", "10,000", "400.0", "2,000.0", "-", "n/a", "12.3", "45.6", "3.10",
             "290.5 (scheduler)", "0.500", "4.250", "8.5", "1.0", "0.5",
             "saturation 800.0 pods/s, run at 400.0; CPU not read: rabbitmq", "abc1234", "-"],
            id="cpu-per-pod-and-rate-auto",
        ),
    ],
)  # fmt: skip
def test_each_row_shows_the_run_against_its_floor(
    entry: Entry, result_report: dict[str, Any] | None, error: str | None, expected: list[str]
) -> None:
    assert row(Result(entry, result_report, error)) == expected


def test_the_table_is_markdown_with_one_row_per_result_and_pipes_escaped() -> None:
    text = table([Result(BASIC, report()), Result(OWN, None, "a|b")])
    header, rule, *rows = text.splitlines()
    assert header.startswith("| workload | nodes | pods | pods/s | projected ceiling pods/s |")
    assert rule.count("|") == header.count("|") == 20
    assert "projected ceiling pods/s" in header and "| informer/cycle | queue/cycle |" in header
    assert len(rows) == 2 and "failed: a\\|b" in rows[1]
    assert header.endswith("| revision | machine cycle pods/s |")


@pytest.mark.parametrize(
    ("calibration", "cell", "says"),
    [
        pytest.param(
            Result(CALIBRATION, report(mode="cycle", pods_per_second=1352.25)), "1,352.2",
            "The machine's cycle rate: 1,352.2 pods/s (`ksched bench SchedulingBasic --mode "
            "cycle --nodes 500`).", id="measured",
        ),
        pytest.param(
            Result(CALIBRATION, None, "exit 1: boom"), "-",
            "The machine's cycle rate was not measured (exit 1: boom).", id="failed",
        ),
    ],
)  # fmt: skip
def test_every_row_is_labelled_with_the_machine_s_cycle_rate(
    calibration: Result, cell: str, says: str
) -> None:
    text = document([Result(BASIC, report()), Result(OWN, None, "x")], 0.1, "2 CPUs", calibration)
    head, _, _header, _rule, *rows = text.splitlines()
    assert says in head
    assert [r.rsplit("|", 2)[1].strip() for r in rows] == [cell, cell]


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        pytest.param('log line\n{"pods": 3}\n', {"pods": 3}, id="last-line"),
        pytest.param('{"pods": 1}\n{"pods": 2}\n\n  \n', {"pods": 2}, id="blank-lines-after"),
    ],
)
def test_the_report_is_the_last_line(stdout: str, expected: dict[str, Any]) -> None:
    assert parse_report(stdout) == expected


@pytest.mark.parametrize(
    ("stdout", "says"),
    [
        ("", "no output"),
        ('{"pods": 2}\nTraceback: boom\n', "the last line is not JSON: 'Traceback: boom'"),
        ("[1, 2]\n", "the last line is not a JSON object"),
    ],
)
def test_a_run_without_a_report_is_a_failure(stdout: str, says: str) -> None:
    with pytest.raises(RunFailed, match=says):
        parse_report(stdout)


def test_the_matrix_is_the_issue_s() -> None:
    assert [(e.name, e.nodes, e.threshold) for e in MATRIX] == [
        ("SchedulingBasic", 5000, 680),
        ("SchedulingBasic-rate500", 5000, None),
        ("SchedulingBasic-rateAuto", 5000, None),
        ("SchedulingBasic-noScheduledEvents", 5000, 680),
        ("SchedulingNodeAffinity", 5000, 540),
        ("TopologySpreading", 5000, 460),
        ("SchedulingPodAntiAffinity", 5000, 180),
        ("SchedulingPodAffinity", 5000, 70),
        ("Unschedulable", 5000, 590),
        ("SchedulingWithMixedChurn", 5000, 710),
        ("SchedulingDaemonset", 15000, 1100),
        ("PreemptionBasic", 1000, None),
        ("PreemptionAsync", 5000, 570),
        ("GangScheduling", 5000, None),
        ("SchedulingBasic-replicas2", 5000, 680),
        ("SchedulingPodAntiAffinity-replicas2", 5000, 180),
    ]


class FakeBench:
    """Answers each ``ksched bench`` run with a report of the nodes it was asked for."""

    def __init__(self, failing: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.failing = failing

    async def __call__(self, args: list[str]) -> tuple[int, str, str]:
        self.calls.append(args)
        if args[0] == self.failing:
            return 1, "", "ksched bench: boom"
        nodes = int(args[args.index("--nodes") + 1])
        return 0, "starting\n" + json.dumps(report(workload=args[0], nodes=nodes)) + "\n", ""


@pytest.mark.parametrize(
    ("argv", "expected_calls"),
    [
        (
            ["--scale", "0.1", "--only", "SchedulingDaemonset,SchedulingBasic-replicas2"],
            [
                ["SchedulingBasic", "--mode", "cycle", "--nodes", "500"],
                ["SchedulingDaemonset", "--mode", "services", "--nodes", "1500"],
                ["SchedulingBasic", "--mode", "services", "--nodes", "500", "--replicas", "2"],
            ],
        ),
        (
            ["--scale", "0.0001", "--only", "PreemptionBasic"],
            [
                ["SchedulingBasic", "--mode", "cycle", "--nodes", "1"],
                ["PreemptionBasic", "--mode", "services", "--nodes", "1"],
            ],
        ),
    ],
)
def test_scale_and_only_choose_the_runs(
    argv: list[str], expected_calls: list[list[str]], tmp_path: Path
) -> None:
    bench = FakeBench()
    out = tmp_path / "matrix.md"
    assert main([*argv, "--out", str(out)], runner=bench) == 0
    assert bench.calls == expected_calls
    text = out.read_text()
    assert f"--scale {float(argv[1]):g}" in text
    assert text.count("\n| ") == len(expected_calls)  # the header, a row per services run
    assert "The machine's cycle rate: 700.0 pods/s" in text


def test_a_failed_run_is_a_row_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = FakeBench(failing="TopologySpreading")
    argv = ["--only", "TopologySpreading,Unschedulable", "--scale", "0.01"]
    assert main(argv, runner=bench) == 1
    out = capsys.readouterr().out
    assert "failed: exit 1: ksched bench: boom" in out and "| Unschedulable | 50 |" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "SchedulingBsic"], "matrix.py: --only: no row named 'SchedulingBsic' (rows: "),
        (["--only", ","], "matrix.py: --only: no row named at all (rows: "),
        (["--scale", "0"], "matrix.py: --scale: '0': a factor above 0 and at most 10"),
        (["--scale", "big"], "matrix.py: --scale: 'big': a factor above 0 and at most 10"),
        (["--out", "/nonexistent/dir/m.md"], "matrix.py: --out: /nonexistent/dir/m.md: no "),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = FakeBench()
    assert main(argv, runner=bench) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(message) and bench.calls == []


class StoppingBench(FakeBench):
    """Answers like FakeBench until its ``at``-th run (from 1), which stops the matrix
    (``stop``: sets that event, else SIGTERM to this process) and then waits to be
    cancelled, recording that it was."""

    def __init__(self, at: int, stop: asyncio.Event | None = None) -> None:
        super().__init__()
        self.at = at
        self.stop = stop
        self.cancelled: list[str] = []

    async def __call__(self, args: list[str]) -> tuple[int, str, str]:
        if len(self.calls) + 1 < self.at:
            return await super().__call__(args)
        self.calls.append(args)
        if self.stop is not None:
            self.stop.set()
        else:
            os.kill(os.getpid(), signal.SIGTERM)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(args[0])
            raise
        raise AssertionError("not reached")


@pytest.mark.parametrize(
    ("at", "rows"),
    [
        (1, [STOPPED, f"not run: {STOPPED}", f"not run: {STOPPED}"]),
        (2, ["measured", STOPPED, f"not run: {STOPPED}"]),
        (3, ["measured", "measured", STOPPED]),
    ],
    ids=["first-run", "middle-run", "last-run"],
)
async def test_a_stop_cancels_the_run_under_way_and_starts_no_other(
    at: int, rows: list[str]
) -> None:
    stop = asyncio.Event()
    bench = StoppingBench(at, stop)
    entries = [e for e in MATRIX if e.name in ("TopologySpreading", "Unschedulable",
                                                "PreemptionBasic")]  # fmt: skip
    results = await run_matrix(entries, 0.01, bench, stop)
    assert len(bench.calls) == at and bench.cancelled == [bench.calls[-1][0]]
    shown = ["measured" if r.report is not None else r.error for r in results]
    assert shown == rows


def test_sigterm_writes_the_rows_measured_and_exits_143(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = StoppingBench(3)  # the calibration, TopologySpreading, then the stop
    out = tmp_path / "matrix.md"
    argv = ["--only", "TopologySpreading,Unschedulable,PreemptionBasic", "--scale", "0.01"]
    assert main([*argv, "--out", str(out)], runner=bench) == 128 + signal.SIGTERM
    assert bench.cancelled == ["Unschedulable"]
    lines = [line for line in out.read_text().splitlines() if line.startswith("| ")]
    assert len(lines) == 4  # the header and the three rows
    assert lines[1].startswith("| TopologySpreading | 50 |")
    assert f"| {STOPPED} |" in lines[2] and "failed" not in lines[2]
    assert f"| not run: {STOPPED} |" in lines[3]
    assert f"matrix: SIGTERM: {STOPPED}" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, "the handler is removed"


class CycleFails(FakeBench):
    async def __call__(self, args: list[str]) -> tuple[int, str, str]:
        if "cycle" in args:
            self.calls.append(args)
            return 1, "", "ksched bench: no cycle"
        return await super().__call__(args)


def test_a_failed_calibration_leaves_the_rows_unlabelled_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = CycleFails()
    assert main(["--only", "Unschedulable", "--scale", "0.01"], runner=bench) == 1
    out = capsys.readouterr().out
    assert "cycle rate was not measured (exit 1: ksched bench: no cycle)" in out
    assert out.rstrip().endswith("| abc1234 | - |")
