"""Leader leases and fencing, on both backends (see the state machine in
:mod:`services.common.store.base`): one holder per role at a time, a fencing token that
grows with each new term, and every write of a deposed holder refused in the same
atomic step as the write."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from services.common.store import (
    ClusterStore,
    Fence,
    FencedError,
    LeaderLease,
    Nomination,
    Preemption,
    first_token,
)
from tests.contract.store_support import NOW, Clients, node_entry, pod_entry

D = 15.0
"""The lease duration every step asks for."""
T = first_token(NOW)
"""The first term's token (the clock in milliseconds): later ones count up from it."""
TAKEN = first_token(NOW + D)
"""The token of the term that takes the first over once it expired (the clock's then)."""


@dataclass(frozen=True)
class Step:
    holder: str
    at: float
    """Seconds after NOW."""
    term: int | None = None
    """The caller's term, as T + term (None: it asks for a new one)."""
    granted: bool = True
    expect: tuple[str, int, int] = ("", 0, 0)
    """The lease after the step: holder, token - T, transitions."""


CASES: dict[str, list[Step]] = {
    "the first holder's token is the clock in milliseconds": [Step("a", 0, expect=("a", 0, 0))],
    "the holder renews its term": [
        Step("a", 0, expect=("a", 0, 0)),
        Step("a", 10, term=0, expect=("a", 0, 0)),
        Step("a", 20, term=0, expect=("a", 0, 0)),
    ],
    "another waits while the lease is renewed": [
        Step("a", 0, expect=("a", 0, 0)),
        Step("b", 14.9, granted=False, expect=("a", 0, 0)),
        Step("a", 14.9, term=0, expect=("a", 0, 0)),
        Step("b", 29.8, granted=False, expect=("a", 0, 0)),
    ],
    "another takes an expired lease over with the clock's token, above the last": [
        Step("a", 0, expect=("a", 0, 0)),
        Step("b", 15, expect=("b", 15_000, 1)),  # renewed + duration <= now: expired
    ],
    "a term taken within the same millisecond counts up by one": [
        Step("a", 0, expect=("a", 0, 0)),
        Step("a", 0, expect=("a", 1, 0)),
        Step("a", 0, expect=("a", 2, 0)),
    ],
    "a deposed holder cannot renew, nor take a term back while it is held": [
        Step("a", 0, expect=("a", 0, 0)),
        Step("b", 16, expect=("b", 16_000, 1)),
        Step("a", 17, term=0, granted=False, expect=("b", 16_000, 1)),
        Step("a", 18, granted=False, expect=("b", 16_000, 1)),
    ],
    "the same identity without a term starts a new one (a restarted process)": [
        Step("a", 0, expect=("a", 0, 0)),
        Step("a", 1, expect=("a", 1_000, 0)),
        Step("a", 2, term=0, granted=False, expect=("a", 1_000, 0)),
        Step("a", 3, term=1_000, expect=("a", 1_000, 0)),
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_acquire_and_renew(store: ClusterStore, case: str) -> None:
    for step in CASES[case]:
        token = 0 if step.term is None else T + step.term
        granted, lease = await store.acquire_lease(
            "informer", step.holder, D, NOW + step.at, token=token
        )
        assert granted == step.granted, step
        assert (lease.holder, lease.token - T, lease.transitions) == step.expect, step
        assert lease.duration == D
        if granted:
            assert lease.renewed == NOW + step.at


async def test_a_term_keeps_its_acquire_time_and_the_lease_reads_back(store: ClusterStore) -> None:
    await store.acquire_lease("queue", "a", D, NOW)
    granted, lease = await store.acquire_lease("queue", "a", 20.5, NOW + 3.25, token=T)
    assert granted
    assert lease == LeaderLease("queue", "a", T, 20.5, NOW, NOW + 3.25, 0)
    await store.acquire_lease("informer", "b", D, NOW + 1)
    leases = await store.leader_leases()
    assert leases == {
        "queue": lease,
        "informer": LeaderLease("informer", "b", first_token(NOW + 1), D, NOW + 1, NOW + 1, 0),
    }
    assert not lease.expired(NOW + 3.25 + 20.4) and lease.expired(NOW + 3.25 + 20.5)


async def test_a_released_lease_is_taken_at_once_with_the_next_token(store: ClusterStore) -> None:
    await store.acquire_lease("queue", "a", D, NOW)
    assert not await store.release_lease("queue", "b", T, NOW + 1)  # not b's
    assert not await store.release_lease("queue", "a", T + 1, NOW + 1)  # not that term
    assert (await store.leader_leases())["queue"].holder == "a"
    assert await store.release_lease("queue", "a", T, NOW + 1)
    released = (await store.leader_leases())["queue"]
    assert (released.holder, released.token) == ("", T) and released.expired(NOW + 1)
    granted, lease = await store.acquire_lease("queue", "b", D, NOW + 2)
    assert granted and (lease.holder, lease.token, lease.transitions) == ("b", T + 2_000, 1)
    assert not await store.release_lease("queue", "a", T, NOW + 3)  # a's term is over


async def test_a_lost_lease_comes_back_with_its_holders_next_renewal(clients: Clients) -> None:
    store = clients.open()
    await store.acquire_lease("informer", "a", D, NOW)
    await store.acquire_lease("informer", "b", D, NOW + D)  # TAKEN
    await clients.lose()
    assert await store.leader_leases() == {}
    granted, lease = await store.acquire_lease("informer", "b", D, NOW + D + 1, token=TAKEN)
    assert granted and (lease.holder, lease.token) == ("b", TAKEN)
    assert not (await store.acquire_lease("informer", "a", D, NOW + D + 2, token=T))[0]


async def test_after_a_loss_a_new_holders_token_is_still_higher_than_any_before(
    clients: Clients,
) -> None:
    store = clients.open()
    await store.acquire_lease("informer", "a", D, NOW)
    for n in range(1, 5):  # four takeovers, one a lease duration after the other
        await store.acquire_lease("informer", f"b{n}", D, NOW + n * D)
    await clients.lose()
    granted, lease = await store.acquire_lease("informer", "c", D, NOW + 5 * D)
    assert granted and lease.token == first_token(NOW + 5 * D) > T + 4
    assert not (await store.acquire_lease("informer", "b4", D, NOW + 5 * D, token=T + 4))[0]
    fenced = clients.open()
    fenced.fence(Fence("informer", T + 4))
    with pytest.raises(FencedError):
        await fenced.put_queue_view(b"{}")


# -- fencing ----------------------------------------------------------------------------

WRITES: dict[str, Callable[[ClusterStore], Awaitable[Any]]] = {
    "apply": lambda s: s.apply([pod_entry(3, "c", None)]),
    "set_leases": lambda s: s.set_leases({"uid-a": 2}),
    "drop_leases": lambda s: s.drop_leases(["uid-a"]),
    "set_nominations": lambda s: s.set_nominations({"uid-a": Nomination("n1", 1)}),
    "clear_nominations": lambda s: s.clear_nominations(["uid-a"]),
    "set_preemptions": lambda s: s.set_preemptions({"uid-p": Preemption(("uid-a",), NOW)}),
    "drop_preemptions": lambda s: s.drop_preemptions(["uid-p"]),
    "record_evictions": lambda s: s.record_evictions({"uid-a": "default/a"}),
    "drop_evictions": lambda s: s.drop_evictions(["uid-a"]),
    "put_queue_view": lambda s: s.put_queue_view(b'{"new": true}'),
    "invalidate": lambda s: _invalidate(s),
    "objects": lambda s: s.objects("pod"),
}
"""Every write a single-writer role makes (and one guarded read)."""


async def _invalidate(store: ClusterStore) -> bool:
    """End the live epoch (the informer's answer to a Redis failover)."""
    return await store.invalidate((await store.epoch()).token)


async def _everything(store: ClusterStore) -> tuple[Any, ...]:
    return (
        await store.epoch(),
        await store.applied_seq(),
        await store.objects("pod"),
        await store.leases(),
        await store.nominations(),
        await store.preemptions(),
        await store.evictions(),
        await store.queue_view(),
    )


async def _deposed(clients: Clients) -> tuple[ClusterStore, ClusterStore]:
    """A writer that led the queue role with token 1, after "b" took the lease over."""
    setup = clients.open()
    await setup.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", None)])
    await setup.set_leases({"uid-a": 1})
    await setup.set_nominations({"uid-a": Nomination("n1", 5)})
    await setup.set_preemptions({"uid-p": Preemption(("uid-a",), NOW)})
    await setup.record_evictions({"uid-a": "default/a"})
    await setup.put_queue_view(b"{}")
    _, lease = await setup.acquire_lease("queue", "a", D, NOW)
    writer = clients.open()
    writer.fence(Fence("queue", lease.token))
    await setup.acquire_lease("queue", "b", D, NOW + D)  # TAKEN
    return setup, writer


@pytest.mark.parametrize("call", sorted(WRITES))
async def test_a_deposed_leaders_write_is_refused_and_changes_nothing(
    clients: Clients, call: str
) -> None:
    setup, writer = await _deposed(clients)
    before = await _everything(setup)
    with pytest.raises(FencedError) as refused:
        await WRITES[call](writer)
    assert (refused.value.role, refused.value.token, refused.value.current) == ("queue", T, TAKEN)
    assert f"the queue lease has fencing token {TAKEN}, this client's is {T}" in str(refused.value)
    assert await _everything(setup) == before


async def test_restore_is_fenced_too(clients: Clients) -> None:
    setup = clients.open()
    await setup.acquire_lease("informer", "a", D, NOW)
    writer = clients.open()
    writer.fence(Fence("informer", T))
    await setup.acquire_lease("informer", "b", D, NOW + D)
    with pytest.raises(FencedError):
        await writer.restore([node_entry(1, "n1", cpu=1000, pods=10)], final=True)
    assert (await setup.epoch()).state == "blank"


@pytest.mark.parametrize("call", sorted(WRITES))
async def test_the_current_terms_writes_go_through(clients: Clients, call: str) -> None:
    await _deposed(clients)
    leader = clients.open()
    leader.fence(Fence("queue", TAKEN))
    await WRITES[call](leader)
    unfenced = clients.open()  # an instance that elects no leader
    await WRITES[call](unfenced)


async def test_a_fence_on_a_lost_lease_refuses_nothing_until_it_is_back(clients: Clients) -> None:
    """The store lost the leases (and all else): its holder writes it back at its next
    renewal; meanwhile nothing is known to refuse by."""
    setup = clients.open()
    await setup.acquire_lease("informer", "a", D, NOW)
    writer = clients.open()
    writer.fence(Fence("informer", T))
    await clients.lose()
    await writer.restore([node_entry(1, "n1", cpu=1000, pods=10)], final=True)
    assert (await setup.epoch()).seq == 1


async def test_a_fence_names_only_its_own_role(clients: Clients) -> None:
    setup = clients.open()
    await setup.acquire_lease("queue", "a", D, NOW)
    await setup.acquire_lease("informer", "x", D, NOW)
    await setup.acquire_lease("informer", "y", D, NOW + D)  # the informer's term 2
    queue = clients.open()
    queue.fence(Fence("queue", T))
    await queue.put_queue_view(b"{}")
    queue.fence(None)
    await setup.acquire_lease("queue", "b", D, NOW + D)
    await queue.put_queue_view(b"{}")  # unfenced again


# -- preemptions in flight --------------------------------------------------------------


async def test_preemptions_are_recorded_replaced_and_dropped(store: ClusterStore) -> None:
    assert await store.preemptions() == {}
    first = {
        "uid-p": Preemption(("uid-a", "uid-b"), NOW + 0.25),
        "uid-q": Preemption(("uid-c",), NOW),
    }
    await store.set_preemptions(first)
    assert await store.preemptions() == first
    await store.set_preemptions({"uid-p": Preemption(("uid-b",), NOW + 0.25)})
    await store.drop_preemptions(["uid-q", "uid-unknown"])
    assert await store.preemptions() == {"uid-p": Preemption(("uid-b",), NOW + 0.25)}
