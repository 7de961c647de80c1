"""The waiting pods (Permit) of the ClusterStore, on both backends: one outcome per wait,
whichever replica acts, and deadlines that survive any client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from services.common.store import ClusterStore, WaitingRecord
from tests.contract.store_support import Clients


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[ClusterStore]:
    clients = Clients(request.param)
    try:
        yield clients.open()
    finally:
        await clients.teardown()


def waiting(uid: str = "u1", attempt: int = 1, **pending: float) -> WaitingRecord:
    pending = pending or {"A": 10.0}
    return WaitingRecord(
        uid=uid,
        namespace="team",
        name=f"pod-{uid}",
        node="n1",
        attempt=attempt,
        profile="default-scheduler",
        pending=pending,
        waits={p: d - 1.0 for p, d in pending.items()},
        request=b'{"uid":"%s"}' % uid.encode(),
        labels={"scheduling.x-k8s.io/pod-group": "g"},
    )


async def test_a_record_round_trips(store: ClusterStore) -> None:
    record = waiting(A=10.25, B=20.5)
    await store.put_waiting([record])
    assert await store.waiting() == {"u1": record}
    assert await store.next_waiting_deadline() == 10.25


async def test_where_the_pod_waits_round_trips_through_resolution(store: ClusterStore) -> None:
    record = replace(waiting(A=10.0), point="PreBind")
    await store.put_waiting([record])
    assert (await store.waiting())["u1"].point == "PreBind"
    done = await store.reject_waiting("u1", "A", "device binding timeout", 5.0)
    assert done is not None and (done.point, done.message) == ("PreBind", "device binding timeout")
    taken = await store.take_waiting("u1", 1)
    assert taken is not None and taken.point == "PreBind"


@pytest.mark.parametrize(
    ("second", "kept"),
    [(0, 1), (1, 1), (2, 2)],
    ids=["older-attempt-ignored", "same-attempt-replaces", "newer-attempt-replaces"],
)
async def test_put_replaces_only_the_same_or_an_older_attempt(
    store: ClusterStore, second: int, kept: int
) -> None:
    await store.put_waiting([waiting(attempt=1, A=10.0)])
    await store.put_waiting([waiting(attempt=second, A=99.0)])
    (record,) = (await store.waiting()).values()
    assert record.attempt == kept
    assert record.pending == ({"A": 99.0} if second >= 1 else {"A": 10.0})


async def test_allow_removes_one_plugin_then_resolves(store: ClusterStore) -> None:
    await store.put_waiting([waiting(A=10.0, B=20.0)])
    after = await store.allow_waiting("u1", "B", 5.0)
    assert after is not None and after.state == "waiting" and after.pending == {"A": 10.0}
    same = await store.allow_waiting("u1", "C", 5.0)  # not pending: nothing changes
    assert same is not None and same.pending == {"A": 10.0}
    done = await store.allow_waiting("u1", "A", 6.0)
    assert done is not None and (done.state, done.pending, done.resolved_at) == ("allowed", {}, 6.0)
    assert await store.next_waiting_deadline() is None
    assert await store.allow_waiting("u1", "A", 7.0) is None  # resolved already
    assert await store.reject_waiting("u1", "A", "late", 7.0) is None


async def test_reject_resolves_with_plugin_and_message(store: ClusterStore) -> None:
    await store.put_waiting([waiting(A=10.0)])
    rejected = await store.reject_waiting("u1", "A", "over quota", 3.0)
    assert rejected is not None
    assert (rejected.state, rejected.plugin, rejected.message) == ("rejected", "A", "over quota")
    assert await store.reject_waiting("nobody", "A", "x", 3.0) is None


async def test_expire_takes_the_earliest_due_plugin(store: ClusterStore) -> None:
    await store.put_waiting(
        [waiting("u1", A=10.0, B=5.0), waiting("u2", B=8.0, A=8.0), waiting("u3", A=50.0)]
    )
    assert await store.expire_waiting(4.9) == []
    expired = {r.uid: r for r in await store.expire_waiting(9.0)}
    assert {u: (r.state, r.plugin, r.message) for u, r in expired.items()} == {
        "u1": ("rejected", "B", ""),
        "u2": ("rejected", "A", ""),  # a tie: the smaller name
    }
    assert await store.expire_waiting(9.0) == []  # each once
    assert await store.next_waiting_deadline() == 50.0


async def test_take_hands_a_resolved_record_to_one_caller(store: ClusterStore) -> None:
    await store.put_waiting([waiting(A=10.0)])
    still = await store.take_waiting("u1", 1)
    assert still is not None and still.state == "waiting"
    assert await store.take_waiting("u1", 2) is None  # another attempt
    await store.allow_waiting("u1", "A", 4.0)
    assert [r.uid for r in await store.resolved_before(4.0)] == ["u1"]
    assert await store.resolved_before(3.9) == []
    taken = await store.take_waiting("u1", 1)
    assert taken is not None and taken.state == "allowed" and taken.request == b'{"uid":"u1"}'
    assert await store.take_waiting("u1", 1) is None
    assert await store.waiting() == {}


async def test_an_allow_racing_the_timeout_has_one_outcome(store: ClusterStore) -> None:
    records = [waiting(f"u{i}", A=10.0) for i in range(20)]
    await store.put_waiting(records)
    results = await asyncio.gather(
        store.expire_waiting(10.0),
        store.expire_waiting(10.0),
        *(store.allow_waiting(r.uid, "A", 10.0) for r in records),
    )
    expired = [r.uid for batch in results[:2] for r in batch]  # type: ignore[union-attr]
    allowed = [r.uid for r in results[2:] if r is not None and r.state == "allowed"]  # type: ignore[union-attr]
    assert len(expired) == len(set(expired))
    assert sorted(expired + allowed) == sorted(r.uid for r in records)
    states = {u: r.state for u, r in (await store.waiting()).items()}
    assert all(states[u] == "rejected" for u in expired)
    assert all(states[u] == "allowed" for u in allowed)


@pytest.mark.parametrize("verdict", ["allow", "reject"])
async def test_a_returned_record_can_be_taken_again(store: ClusterStore, verdict: str) -> None:
    await store.put_waiting([waiting(A=10.0)])
    if verdict == "allow":
        await store.allow_waiting("u1", "A", 4.0)
    else:
        await store.reject_waiting("u1", "A", "no | way", 4.0)
    taken = await store.take_waiting("u1", 1)
    assert taken is not None and await store.waiting() == {}
    await store.return_waiting([taken])  # the binder's publish failed
    assert [r.uid for r in await store.resolved_before(4.0)] == ["u1"]
    again = await store.take_waiting("u1", 1)
    assert again is not None
    assert (again.state, again.plugin, again.message, again.resolved_at) == (
        taken.state,
        taken.plugin,
        taken.message,
        4.0,
    )
    assert await store.take_waiting("u1", 1) is None


@pytest.mark.parametrize("newer", [1, 2], ids=["same-attempt", "later-attempt"])
async def test_a_returned_record_does_not_replace_a_newer_wait(
    store: ClusterStore, newer: int
) -> None:
    await store.put_waiting([waiting(A=10.0)])
    await store.allow_waiting("u1", "A", 4.0)
    taken = await store.take_waiting("u1", 1)
    assert taken is not None
    await store.put_waiting([waiting(attempt=newer, A=30.0)])  # the pod waits again
    await store.return_waiting([taken])
    (record,) = (await store.waiting()).values()
    assert (record.attempt, record.state, record.pending) == (newer, "waiting", {"A": 30.0})
    assert await store.next_waiting_deadline() == 30.0
