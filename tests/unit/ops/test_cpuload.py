"""The CPU hog behind ``ops/test --under-load`` (tests/cpuload.py): its duty cycle on an
injected clock, its arguments, and that it never outlives the run it loads."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cpuload

ROOT = Path(__file__).resolve().parents[3]
BOUND = 30.0
"""Seconds a hog may take to notice its end (it looks once a period, 0.1 s)."""


class FakeClock:
    def __init__(self, tick: float) -> None:
        self.now = 0.0
        self.tick = tick
        self.slept: list[float] = []

    def __call__(self) -> float:
        self.now += self.tick
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.mark.parametrize(
    ("busy", "period", "periods"),
    [(0.85, 0.1, 3), (0.5, 0.2, 2), (1.0, 0.1, 2)],
)
def test_spins_the_busy_fraction_of_each_period_and_sleeps_the_rest(
    busy: float, period: float, periods: int
) -> None:
    clock = FakeClock(tick=0.001)
    left = iter(range(periods, -1, -1))
    ran = cpuload.hog(busy, period, lambda: next(left) > 0, clock=clock, sleep=clock.sleep)
    assert ran == periods
    assert clock.now == pytest.approx(periods * period, abs=0.005 * periods)
    spun = clock.now - sum(clock.slept)
    assert spun == pytest.approx(periods * busy * period, abs=0.005 * periods)


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("0.85", True),
        ("1", True),
        ("0.01", True),
        ("0", False),
        ("1.5", False),
        ("-0.5", False),
        ("abc", False),
        ("nan", False),
        ("inf", False),
    ],
)
def test_busy_is_a_fraction_of_one_core(text: str, valid: bool) -> None:
    if valid:
        assert cpuload.fraction(text) == float(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=f"{text} is not a fraction"):
            cpuload.fraction(text)


def hog(*args: str) -> subprocess.Popen[str]:
    """A hog that has said it runs (its signal handlers are in place by then)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.cpuload", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert "busy until pid" in process.stdout.readline()
    return process


def end(*processes: subprocess.Popen[str]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=BOUND)


def test_ends_when_the_run_it_loads_is_gone() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    with parent, hog("--busy", "0.2", "--parent", str(parent.pid)) as loader:
        try:
            assert parent.stdin is not None
            parent.stdin.close()
            assert parent.wait(timeout=BOUND) == 0
            assert loader.wait(timeout=BOUND) == 0
        finally:
            end(parent, loader)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_ends_on_a_signal(signum: signal.Signals) -> None:
    with hog("--busy", "0.2", "--parent", str(os.getpid())) as loader:
        try:
            os.kill(loader.pid, signum)
            assert loader.wait(timeout=BOUND) == 0
        finally:
            end(loader)


def test_ops_test_refuses_a_load_that_is_not_a_fraction() -> None:
    done = subprocess.run(
        ["bash", "ops/test", "--under-load=lots"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KSCHED_SKIP_BROKERS": "1"},
    )
    assert done.returncode == 2
    assert done.stderr == "ops/test: --under-load=lots: lots is not a fraction in (0, 1]\n"
    assert "ruff" not in done.stdout
