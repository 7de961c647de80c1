"""The release version of the ClusterStore, on both backends: ``release_waiting``
rejects waiting pods and gives their reservations' room back in one step, only on the
version its caller decided on, so of two replicas releasing on the same view exactly
one does (scheduler.releases)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

import pytest

from services.common.store import ClusterStore, WaitingRecord
from tests.contract.store_support import NOW, assume_one, claim, node_entry, res, usage

GANG = ("a", "b", "c")
"""Pods ``uid-<name>`` reserved (1 cpu each) and waiting at Permit on n1, attempt 1."""


def waiting_on(name: str, attempt: int = 1) -> WaitingRecord:
    return WaitingRecord(
        uid=f"uid-{name}",
        namespace="default",
        name=name,
        node="n1",
        attempt=attempt,
        profile="default-scheduler",
        pending={"Coscheduling": NOW + 60.0},
        waits={"Coscheduling": 60.0},
        request=b"{}",
        labels={"scheduling.x-k8s.io/pod-group": "g"},
    )


async def gang_waiting(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=4000, pods=110)])
    await store.set_leases({f"uid-{name}": 1 for name in GANG})
    for name in GANG:
        assert (await assume_one(store, res(name, "n1", cpu=1000))).status == "assumed"
    assert await store.begin_bind([claim(name, "n1") for name in GANG], NOW) == [True] * 3
    await store.put_waiting([waiting_on(name) for name in GANG])


def rejection(name: str) -> tuple[str, str, str]:
    return (f"uid-{name}", "Coscheduling", "optimistic rejection in PostFilter")


async def test_a_release_on_the_current_version_rejects_and_gives_the_room_back(
    store: ClusterStore,
) -> None:
    await gang_waiting(store)
    assert await store.release_version() == 0
    records = await store.release_waiting([rejection("a"), rejection("b")], 0, NOW + 1)
    assert records is not None
    assert sorted((r.uid, r.state, r.plugin, r.message, r.resolved_at) for r in records) == [
        ("uid-a", "rejected", "Coscheduling", "optimistic rejection in PostFilter", NOW + 1),
        ("uid-b", "rejected", "Coscheduling", "optimistic rejection in PostFilter", NOW + 1),
    ]
    assert set(await store.assumed()) == {"uid-c"}
    assert (await usage(store, "n1")).get("cpu") == 1000
    assert {u: r.state for u, r in (await store.waiting()).items()} == {
        "uid-a": "rejected",
        "uid-b": "rejected",
        "uid-c": "waiting",
    }
    assert await store.release_version() == 1


async def test_a_release_on_an_older_version_changes_nothing(store: ClusterStore) -> None:
    await gang_waiting(store)
    assert await store.release_waiting([rejection("a")], 0, NOW) is not None
    before = (await store.waiting(), await store.assumed(), await usage(store, "n1"))
    assert await store.release_waiting([rejection("b"), rejection("c")], 0, NOW) is None
    assert (await store.waiting(), await store.assumed(), await usage(store, "n1")) == before
    assert await store.release_version() == 1


@dataclass(frozen=True)
class Skipped:
    name: str
    before: str
    """What happened to uid-a first: ``rejected`` (by another step), ``prebind`` (it
    waits at PreBind now), ``gone`` (its record was taken)."""


SKIPPED = [
    Skipped("rejected already", "rejected"),
    Skipped("waiting at PreBind", "prebind"),
    Skipped("not waiting at all", "gone"),
]


@pytest.mark.parametrize("case", SKIPPED, ids=[c.name for c in SKIPPED])
async def test_a_release_that_rejects_nothing_keeps_the_version_and_the_room(
    store: ClusterStore, case: Skipped
) -> None:
    await gang_waiting(store)
    if case.before == "prebind":
        await store.put_waiting([replace(waiting_on("a"), point="PreBind")])
    else:
        await store.reject_waiting("uid-a", "ExternalPermit", "no", NOW)
    if case.before == "gone":
        assert await store.take_waiting("uid-a", 1) is not None
    assert await store.release_waiting([rejection("a")], 0, NOW) == []
    assert await store.release_version() == 0
    assert "uid-a" in await store.assumed()


@pytest.mark.parametrize(
    "record",
    [replace(waiting_on("a"), attempt=2), replace(waiting_on("a"), node="n2")],
    ids=["another-attempt", "another-node"],
)
async def test_a_reservation_that_is_not_the_records_stays(
    store: ClusterStore, record: WaitingRecord
) -> None:
    await gang_waiting(store)
    await store.put_waiting([record])
    records = await store.release_waiting([rejection("a")], 0, NOW)
    assert records is not None and [r.uid for r in records] == ["uid-a"]
    assert (await store.assumed())["uid-a"].attempt == 1
    assert await store.release_version() == 1


async def test_of_two_releases_on_one_version_exactly_one_is_made(store: ClusterStore) -> None:
    await gang_waiting(store)
    results = await asyncio.gather(
        store.release_waiting([rejection("a")], 0, NOW),
        store.release_waiting([rejection("b"), rejection("c")], 0, NOW),
    )
    made = [r for r in results if r is not None]
    assert len(made) == 1 and len(made[0]) in (1, 2)
    assert await store.release_version() == 1
    assert len(await store.assumed()) == 3 - len(made[0])
