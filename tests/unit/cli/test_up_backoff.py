"""The restart backoff of ``ksched up`` (and of a service retrying its broker): doubling
from 0.5 s to a 30 s cap, reset after a stable run, driven by a FakeClock."""

from __future__ import annotations

import pytest

from services.cli.backoff import Backoff
from services.common.clock import FakeClock
from services.common.settings import RestartSettings

# Each step: ("run", seconds) = started, then ran that long; ("fail", expected delay).
CASES = {
    "doubles from 0.5 s": (
        [("run", 1), ("fail", 0.5), ("run", 1), ("fail", 1.0), ("run", 1), ("fail", 2.0)]
    ),
    "stops at the 30 s cap": (
        [*[step for _ in range(6) for step in (("run", 1), ("fail", None))], ("fail", 30.0)]
    ),
    "a stable run (60 s) resets it": (
        [("run", 1), ("fail", 0.5), ("run", 1), ("fail", 1.0), ("run", 60), ("fail", 0.5)]
    ),
    "a run just short of stable does not": (
        [("run", 1), ("fail", 0.5), ("run", 1), ("fail", 1.0), ("run", 59.9), ("fail", 2.0)]
    ),
    "retries without a start in between keep doubling": (
        [("fail", 0.5), ("fail", 1.0), ("fail", 2.0), ("fail", 4.0)]
    ),
}


@pytest.mark.parametrize("steps", CASES.values(), ids=CASES.keys())
async def test_backoff(steps: list[tuple[str, float | None]]) -> None:
    clock = FakeClock()
    backoff = Backoff(clock)
    for kind, value in steps:
        if kind == "run":
            backoff.started()
            await clock.advance(float(value or 0))
            continue
        delay = backoff.failed()
        if value is not None:
            assert delay == value
        await clock.advance(delay)


def test_failures_count_since_the_last_reset() -> None:
    backoff = Backoff(FakeClock())
    for _ in range(3):
        backoff.failed()
    assert backoff.failures == 3


@pytest.mark.parametrize(("initial", "cap"), [(0.0, 30.0), (2.0, 1.0)])
def test_a_restart_backoff_needs_0_lt_initial_le_cap(initial: float, cap: float) -> None:
    with pytest.raises(ValueError, match="initial"):
        RestartSettings(initial=initial, cap=cap)
