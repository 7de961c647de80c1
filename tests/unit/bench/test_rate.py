"""``ksched bench --rate``: a number of pods per second or ``auto``, and ``auto``'s two
runs (saturation, then half of it) on an injected runner."""

from __future__ import annotations

import argparse

import pytest

from bench.command import AUTO, at_rate, rate_flag
from bench.scrape import BenchFailure
from services.cli.errors import InputError
from services.cli.main import main


@pytest.mark.parametrize(
    ("text", "expected"), [(None, None), ("auto", AUTO), ("250", 250.0), ("12.5", 12.5)]
)
def test_the_rate_is_pods_per_second_or_auto(text: str | None, expected: object) -> None:
    assert rate_flag(argparse.Namespace(rate=text)) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("fast", "--rate: 'fast': pods per second (a number) or auto"),
        ("-3", "--rate: -3 pods per second: must be more than 0"),
        ("nan", "--rate: nan pods per second: must be more than 0"),
    ],
)
def test_a_rate_that_is_neither_is_refused(text: str, says: str) -> None:
    with pytest.raises(InputError) as raised:
        rate_flag(argparse.Namespace(rate=text))
    assert str(raised.value) == says


def test_the_cli_refuses_a_bad_rate_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "SchedulingBasic", "--rate", "fast", "--mode", "services"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "ksched bench: --rate: 'fast': pods per second (a number) or auto"
    ]


class Runs:
    """A services-mode run that reaches ``reached`` pods/s all at once, and the rate it
    is given otherwise (as bench.services reports it)."""

    def __init__(self, reached: float) -> None:
        self.reached = reached
        self.rates: list[float | None] = []

    async def __call__(self, rate: float | None) -> dict[str, object]:
        self.rates.append(rate)
        if rate is None:
            return {"pods_per_second": self.reached, "p99_ms": 900.0}
        return {"pods_per_second": rate, "p99_ms": 40.0, "rate": rate}


async def test_auto_measures_the_saturation_then_runs_at_half_of_it() -> None:
    runs = Runs(reached=801.0)
    report = await at_rate(runs, AUTO)
    assert runs.rates == [None, 400.5]
    assert report == {
        "pods_per_second": 400.5,
        "p99_ms": 40.0,
        "rate": 400.5,
        "saturation_pods_per_s": 801.0,
    }


@pytest.mark.parametrize("rate", [None, 120.0])
async def test_without_auto_there_is_one_run(rate: float | None) -> None:
    runs = Runs(reached=500.0)
    report = await at_rate(runs, rate)
    assert runs.rates == [rate] and "saturation_pods_per_s" not in report


async def test_a_saturation_run_of_0_pods_per_second_is_a_failure() -> None:
    runs = Runs(reached=0.0)
    with pytest.raises(BenchFailure, match="the saturation run measured 0 pods per second"):
        await at_rate(runs, AUTO)
    assert runs.rates == [None]
