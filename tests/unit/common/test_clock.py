"""FakeClock: step/set_time move time for code that only reads now(); a due sleeper
needs advance()."""

from __future__ import annotations

import asyncio

import pytest

from services.common.clock import FakeClock


def test_step_and_set_time_move_now() -> None:
    clock = FakeClock(100.0)
    clock.step(2.5)
    assert clock.now() == 102.5
    clock.set_time(90.0)
    assert clock.now() == 90.0


async def test_step_refuses_to_pass_a_sleeper_but_advance_wakes_it() -> None:
    clock = FakeClock(0.0)
    sleeper = asyncio.create_task(clock.sleep(5))
    await asyncio.sleep(0)
    clock.step(4.9)  # not due yet
    with pytest.raises(RuntimeError, match="advance"):
        clock.step(0.1)
    assert clock.now() == 4.9 and not sleeper.done()
    await clock.advance(0.1)
    assert sleeper.done() and clock.now() == 5.0
