"""The informer's start steps are retried while a dependency is unavailable (the faults
that made it the leader), never otherwise: table-driven over the failures a step meets."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from services.common.bus import BusError, BusRefused
from services.common.store import Deposed
from services.informer import startup


@dataclass
class InstantClock:
    """Sleeping moves the time at once, and is recorded."""

    t: float = 0.0
    slept: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


@dataclass
class Step:
    """Fails with each of ``failures`` in turn, then succeeds."""

    failures: list[Exception]
    calls: int = 0

    async def __call__(self) -> None:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)


NO_REPLICA = ConnectionError("event log stream://ksched.eventlog: PRECONDITION_FAILED")

CASES: dict[str, tuple[list[Exception], type[Exception] | None, list[float]]] = {
    "a stream with no replica on its node yet, twice": (
        [NO_REPLICA, NO_REPLICA],
        None,
        [0.5, 1.0],
    ),
    "the broker gone, then Redis timing out": (
        [BusError("connection lost"), TimeoutError()],
        None,
        [0.5, 1.0],
    ),
    "unavailable for longer than the patience": ([NO_REPLICA] * 40, ConnectionError, None),
    "another leader took over": ([Deposed("the informer lease has another term")], Deposed, []),
    "a refusal is not unavailability": ([BusRefused("access refused")], BusRefused, []),
    "a bug is raised at once": ([ValueError("bad")], ValueError, []),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_start_step_is_retried_only_while_a_dependency_is_unavailable(case: str) -> None:
    failures, raised, slept = CASES[case]
    clock, first, second = InstantClock(), Step(list(failures)), Step([])
    if raised is None:
        await startup.until_available(clock, first, second)
        assert (first.calls, second.calls) == (len(failures) + 1, 1)
    else:
        with pytest.raises(raised):
            await startup.until_available(clock, first, second)
        assert second.calls == 0
    if slept is not None:
        assert clock.slept == slept
    else:  # gave up within its patience, the waits capped
        assert sum(clock.slept) <= startup.PATIENCE
        assert max(clock.slept) == startup.MAX_DELAY


class _ClaimOnce:
    """An event log whose first claim meets a node without the stream's replica."""

    def __init__(self) -> None:
        self.claims: list[int] = []

    async def claim(self, fence: int) -> None:
        self.claims.append(fence)
        if len(self.claims) == 1:
            raise NO_REPLICA


async def test_a_new_leaders_claim_of_the_log_waits_for_its_broker() -> None:
    from services.informer.leadership import Leadership

    log, clock = _ClaimOnce(), InstantClock()
    await Leadership(log, None, clock).claim(7)  # type: ignore[arg-type]
    assert (log.claims, clock.slept) == ([7, 7], [startup.FIRST_DELAY])
