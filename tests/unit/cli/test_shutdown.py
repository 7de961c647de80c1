"""A service process's stop request: the first signal asks, arms the watchdog; a second
exits at once; the watchdog exits if stopping outlives the bound."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import NoReturn

import pytest

from services.cli.shutdown import EXIT_STUCK, Shutdown


class Exited(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def write(self, line: str) -> None:
        self.lines.append(line)

    def timer(self, seconds: float, function: Callable[[], None]) -> None:
        self.timers.append((seconds, function))

    def exit(self, code: int) -> NoReturn:
        raise Exited(code)

    def shutdown(self) -> Shutdown:
        return Shutdown(
            "ksched run informer", bound=9.0, timer=self.timer, write=self.write, exit=self.exit
        )


async def test_the_first_signal_requests_the_stop_and_arms_the_watchdog_once() -> None:
    seen = Recorder()
    shutdown = seen.shutdown()
    shutdown._loop = asyncio.get_running_loop()
    shutdown.on_signal(signal.SIGTERM)
    await asyncio.wait_for(shutdown.requested.wait(), 5)
    shutdown.arm()
    assert [seconds for seconds, _ in seen.timers] == [9.0]
    assert seen.lines == []


@pytest.mark.parametrize(
    ("first", "second", "code"),
    [
        (signal.SIGTERM, signal.SIGTERM, 143),
        (signal.SIGINT, signal.SIGINT, 130),
        (signal.SIGTERM, signal.SIGINT, 130),
    ],
)
def test_a_second_signal_exits_at_once_with_one_line(
    first: signal.Signals, second: signal.Signals, code: int
) -> None:
    seen = Recorder()
    shutdown = seen.shutdown()
    shutdown.on_signal(first)
    with pytest.raises(Exited) as exited:
        shutdown.on_signal(second)
    assert exited.value.code == code
    assert seen.lines == [f"ksched run informer: {second.name} while stopping: exiting now"]


def test_the_watchdog_exits_when_stopping_outlives_the_bound() -> None:
    seen = Recorder()
    seen.shutdown().arm()
    ((seconds, expire),) = seen.timers
    with pytest.raises(Exited) as exited:
        expire()
    assert (seconds, exited.value.code) == (9.0, EXIT_STUCK)
    assert seen.lines == ["ksched run informer: not stopped within 9 s: exiting now"]
