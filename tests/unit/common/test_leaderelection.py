"""The LeaderElector on the in-memory store and a fake clock (client-go's
leaderelection semantics): acquire, renew, expire, take over, miss the renew deadline,
be deposed, release on stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from services.common.clock import FakeClock
from services.common.leaderelection import DeposingStore, LeaderElector
from services.common.settings import LeaderElectionSettings
from services.common.store import ClusterStore, Fence, FencedError, MemoryStore, first_token

SETTINGS = LeaderElectionSettings(lease_duration=15, renew_deadline=10, retry_period=2)
STEP = 0.5
"""Seconds the fake clock moves per step."""


class Flaky:
    """A store client whose leader-lease calls fail (``down``) or hang (``paused``: a
    process stopped by SIGSTOP) on demand."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.down = False
        self.paused: asyncio.Event | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def acquire_lease(self, *args: Any, **kwargs: Any) -> Any:
        if self.paused is not None:
            await self.paused.wait()
        if self.down:
            raise ConnectionError("Redis is down")
        return await self.inner.acquire_lease(*args, **kwargs)


@dataclass
class Candidate:
    identity: str
    store: Flaky
    clock: FakeClock
    started: list[int] = field(default_factory=list)
    stopped: int = 0
    leaders: list[str] = field(default_factory=list)
    elector: LeaderElector = field(init=False)
    task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.elector = LeaderElector(
            self.store,
            self.clock,
            "informer",
            LeaderElectionSettings(
                lease_duration=SETTINGS.lease_duration,
                renew_deadline=SETTINGS.renew_deadline,
                retry_period=SETTINGS.retry_period,
                identity=self.identity,
            ),
            on_started_leading=self.started.append,
            on_stopped_leading=self._stop,
            on_new_leader=self.leaders.append,
            jitter=lambda: 0.0,
        )

    def _stop(self) -> None:
        self.stopped += 1

    def run(self) -> None:
        self.task = asyncio.create_task(self.elector.run())

    async def die(self) -> None:
        """kill -9: it stops renewing and never releases."""
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    def status(self) -> float:
        value = self.elector.registry.get_sample_value(
            "leader_election_master_status", {"name": "informer"}
        )
        assert value is not None
        return value


class World:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.memory = MemoryStore("t")
        self.candidates: list[Candidate] = []

    def candidate(self, identity: str) -> Candidate:
        c = Candidate(identity, Flaky(self.memory.client()), self.clock)
        self.candidates.append(c)
        return c

    async def settle(self) -> None:
        for _ in range(30):
            await asyncio.sleep(0)

    async def run_for(self, seconds: float) -> None:
        """Move the clock ``seconds`` in steps, letting every task run after each."""
        await self.settle()
        for _ in range(round(seconds / STEP)):
            await self.clock.advance(STEP)
            await self.settle()

    async def until(self, condition: Any, within: float) -> float:
        """Seconds until ``condition()`` held (stepping the clock), at most ``within``."""
        waited = 0.0
        await self.settle()
        while not condition():
            assert waited < within, f"not within {within} s"
            await self.run_for(STEP)
            waited += STEP
        return waited

    async def close(self) -> None:
        for c in self.candidates:
            if c.task is not None:
                c.task.cancel()
                await asyncio.gather(c.task, return_exceptions=True)


@pytest.fixture
async def world() -> AsyncIterator[World]:
    w = World()
    yield w
    await w.close()


async def test_acquire_a_free_lease_at_once_with_token_1(world: World) -> None:
    a = world.candidate("a")
    assert a.status() == 0
    a.run()
    await world.settle()
    token = first_token(world.clock.now())
    assert a.started == [token] and a.elector.leading and a.elector.token == token
    assert a.status() == 1
    assert a.leaders == ["a"]


async def test_the_leader_renews_and_a_standby_waits(world: World) -> None:
    a, b = world.candidate("a"), world.candidate("b")
    a.run()
    await world.settle()
    b.run()
    await world.run_for(120)
    assert len(a.started) == 1 and a.stopped == 0
    assert b.started == [] and b.status() == 0
    assert b.leaders == ["a"]
    lease = (await world.memory.leader_leases())["informer"]
    assert lease.holder == "a" and lease.renewed >= world.clock.now() - SETTINGS.retry_period


async def test_a_standby_takes_over_within_a_lease_duration_of_the_leader_dying(
    world: World,
) -> None:
    a, b = world.candidate("a"), world.candidate("b")
    a.run()
    await world.settle()
    b.run()
    await world.run_for(30)
    last_renewal = (await world.memory.leader_leases())["informer"].renewed
    await a.die()
    died = world.clock.now()
    await world.until(lambda: b.started, within=SETTINGS.lease_duration + 2 * SETTINGS.retry_period)
    assert len(b.started) == 1 and b.started[0] > a.started[0]  # a later term
    assert world.clock.now() - last_renewal >= SETTINGS.lease_duration  # not before it expired
    assert world.clock.now() - died <= SETTINGS.lease_duration + SETTINGS.retry_period
    assert b.leaders == ["a", "b"]


async def test_a_leader_that_cannot_renew_stops_at_the_renew_deadline(world: World) -> None:
    a, b = world.candidate("a"), world.candidate("b")
    a.run()
    await world.settle()
    b.run()
    await world.run_for(4)
    last_renewal = (await world.memory.leader_leases())["informer"].renewed
    a.store.down = True
    await world.until(lambda: a.stopped, within=SETTINGS.renew_deadline + SETTINGS.retry_period)
    stopped_at = world.clock.now()
    assert last_renewal + SETTINGS.renew_deadline <= stopped_at
    assert stopped_at < last_renewal + SETTINGS.lease_duration  # before anyone may take over
    assert a.task is not None and a.task.done() and not a.elector.leading
    assert "timed out" in a.elector.reason and a.status() == 0
    await world.until(lambda: b.started, within=SETTINGS.lease_duration)
    assert len(b.started) == 1 and b.started[0] > a.started[0]  # a later term


async def test_a_stopped_leader_woken_after_a_takeover_stops_and_cannot_write(
    world: World,
) -> None:
    """SIGSTOP at unit level: the leader's calls hang while its lease expires and the
    standby takes over; resumed, it stops leading, and every write it makes with its
    token is refused."""
    a, b = world.candidate("a"), world.candidate("b")
    a.run()
    await world.settle()
    writer = world.memory.client()
    writer.fence(Fence("informer", a.elector.token))
    b.run()
    await world.run_for(4)
    a.store.paused = asyncio.Event()  # SIGSTOP
    await world.until(lambda: b.started, within=SETTINGS.lease_duration + 2 * SETTINGS.retry_period)
    a.store.paused.set()  # SIGCONT
    await world.until(lambda: a.stopped, within=SETTINGS.retry_period)
    assert not a.elector.leading and a.status() == 0
    with pytest.raises(FencedError):
        await writer.put_queue_view(b"{}")
    with pytest.raises(FencedError):
        await writer.restore([], final=True)


async def test_a_refused_write_deposes_the_leader_at_once(world: World) -> None:
    a = world.candidate("a")
    a.run()
    await world.settle()
    store: ClusterStore = DeposingStore(a.store.inner, a.elector)
    store.fence(Fence("informer", a.elector.token))
    other = world.memory.client()
    await other.acquire_lease("informer", "b", 15, world.clock.now() + 15)  # took it over
    with pytest.raises(FencedError):
        await store.put_queue_view(b"{}")
    await world.settle()
    assert a.stopped == 1 and not a.elector.leading
    assert "a store write was refused" in a.elector.reason


async def test_release_on_stop_hands_the_lease_over_at_once(world: World) -> None:
    a, b = world.candidate("a"), world.candidate("b")
    a.run()
    await world.settle()
    b.run()
    await world.run_for(6)
    await a.die()  # stopped: no renewals, still the holder until it releases
    await a.elector.release()
    assert a.status() == 0 and a.stopped == 0  # released, not lost
    waited = await world.until(lambda: b.started, within=SETTINGS.retry_period)
    assert len(b.started) == 1 and b.started[0] > a.started[0]
    assert waited <= SETTINGS.retry_period
    lease = (await world.memory.leader_leases())["informer"]
    assert (lease.holder, lease.transitions) == ("b", 1)


async def test_one_try_only_does_not_stand_by(world: World) -> None:
    a, b = world.candidate("a"), world.candidate("b")
    a.run()
    await world.settle()
    await b.elector.run(once=True)
    assert b.started == [] and not b.elector.leading
    assert b.elector.leader == "a"


async def test_a_store_that_fails_at_first_is_retried_until_the_lease_is_acquired(
    world: World,
) -> None:
    a = world.candidate("a")
    a.store.down = True
    a.run()
    await world.run_for(10)
    assert a.started == []
    a.store.down = False
    await world.until(lambda: a.started, within=SETTINGS.retry_period)
    assert a.started == [first_token(world.clock.now())]


@pytest.mark.parametrize(
    ("duration", "deadline", "retry", "message"),
    [
        (15, 10, 0, "retry-period must be greater than zero"),
        (15, 2, 2, "renew-deadline must be greater than --leader-elect-retry-period"),
        (10, 10, 2, "lease-duration must be greater than --leader-elect-renew-deadline"),
    ],
)
def test_settings_are_checked_as_client_go_checks_them(
    duration: float, deadline: float, retry: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LeaderElectionSettings(lease_duration=duration, renew_deadline=deadline, retry_period=retry)
