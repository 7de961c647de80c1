"""bench.services.SigtermStop: what SIGTERM does to a services-mode run, by the moment
it comes. The handler is called as the loop calls it on SIGTERM; the real signal, the
stopped processes and the removed namespace are tests/integration/test_bench_sigterm.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from bench.services import SigtermStop
from services.cli.errors import Terminated

STOPPED = (
    "stopped by SIGTERM before its report: its processes were stopped and namespace "
    "bench0123 removed"
)


@dataclass(frozen=True)
class Case:
    name: str
    signalled: bool
    cleaning: bool
    """The run had begun its clean-up when the signal came."""
    cancelled: bool
    """The run is cancelled at once (its clean-up then runs in its ``finally``)."""
    ends_stopped: bool
    """After the clean-up the run ends as stopped, not with its report."""


CASES = [
    Case("no signal", signalled=False, cleaning=False, cancelled=False, ends_stopped=False),
    Case("while measuring", signalled=True, cleaning=False, cancelled=True, ends_stopped=True),
    Case("during the clean-up", signalled=True, cleaning=True, cancelled=False, ends_stopped=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_sigterm_ends_the_run_as_stopped_whenever_it_comes(case: Case) -> None:
    made: asyncio.Future[SigtermStop] = asyncio.get_running_loop().create_future()
    go_on = asyncio.Event()

    async def run() -> None:
        """A run's shape (bench.services.bench_services): the handler is installed in
        its task, which waits, then cleans up and ends as stopped if signalled."""
        stop = SigtermStop()
        stop.cleaning = case.cleaning
        made.set_result(stop)
        try:
            await go_on.wait()
        finally:
            stop.close()
        stop.end_if_received("bench0123")

    task = asyncio.create_task(run())
    stop = await made
    if case.signalled:
        stop._on_sigterm()  # as the loop calls it on SIGTERM
    assert stop.received == case.signalled
    go_on.set()
    if case.cancelled:
        with pytest.raises(asyncio.CancelledError):
            await task
    elif case.ends_stopped:
        with pytest.raises(Terminated) as raised:
            await task
        assert str(raised.value) == STOPPED
    else:
        await task
