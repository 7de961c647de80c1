"""The ClusterStore contract, run against MemoryStore and RedisStore alike."""

from __future__ import annotations

import asyncio

import anyio.lowlevel
import pytest

from services.common.store import (
    Assumed,
    AssumeResult,
    ClusterStore,
    MemoryStore,
    Nomination,
    NominationClaim,
    Reservation,
    open_store,
)
from tests.contract.store_support import (
    NOW,
    TTL,
    Clients,
    assume_one,
    claim,
    node_deleted,
    node_entry,
    pod_entry,
    res,
    snapshot,
    usage,
)


async def test_empty_store(store: ClusterStore) -> None:
    assert await snapshot(store) == (0, {}, {}, {}, {}, {}, {}, {}, {})
    assert await store.node_usage(["n1"]) == {"n1": {}}
    assert await store.allocatable(["n1"]) == {}


async def test_apply_is_idempotent_and_skips_applied_seqs(store: ClusterStore) -> None:
    batch = [
        node_entry(1, "n1", cpu=4000, pods=10),
        pod_entry(2, "a", "n1", cpu=500),
        pod_entry(3, "b", None),
    ]
    await store.apply(batch)
    first = await snapshot(store)
    assert first[0] == 3
    assert set(first[2]) == {"default/a", "default/b"}

    await store.apply(batch)
    await store.apply([node_deleted(2, "n1"), pod_entry(3, "a", None, deleted=True)])
    assert await snapshot(store) == first

    await store.apply(
        [pod_entry(3, "x", "n1", cpu=1), pod_entry(4, "b", "n1", cpu=100)]
    )  # 3 skipped
    assert await store.applied_seq() == 4
    assert "default/x" not in await store.objects("pod")
    assert await usage(store, "n1") == {"cpu": 600, "pods": 2}


async def test_node_usage_sums_bound_pods(store: ClusterStore) -> None:
    await store.apply(
        [
            node_entry(1, "n1", cpu=4000, memory=8 << 30, pods=110),
            node_entry(2, "n2", cpu=2000, pods=110),
            pod_entry(3, "a", "n1", cpu=500, memory=1 << 30),
            pod_entry(4, "b", "n1", cpu=250),
            pod_entry(5, "c", None, cpu=9999),
            pod_entry(6, "b", "n1", cpu=300),  # updated requests replace the old charge
        ]
    )
    assert await store.node_usage() == {
        "n1": {"cpu": 800, "memory": 1 << 30, "pods": 2},
        "n2": {},
    }
    assert await store.allocatable(["n2", "gone"]) == {"n2": {"cpu": 2000, "pods": 110}}
    assert (await store.allocatable())["n1"] == {"cpu": 4000, "memory": 8 << 30, "pods": 110}


async def test_assume_within_capacity(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", "n1", cpu=400)])
    await store.set_leases({"uid-p": 1})
    assert await assume_one(store, res("p", "n1", cpu=600)) == AssumeResult("assumed")
    assert await usage(store, "n1") == {"cpu": 1000, "pods": 2}
    assert await store.assumed() == {
        "uid-p": Assumed(node="n1", attempt=1, deadline=NOW + TTL, requests={"cpu": 600, "pods": 1})
    }


async def test_assume_conflict_returns_usage_and_reason(store: ClusterStore) -> None:
    await store.apply(
        [node_entry(1, "n1", cpu=1000, memory=100, pods=10), pod_entry(2, "a", "n1", cpu=700)]
    )
    await store.set_leases({"uid-p": 1})
    cases = [
        ({"cpu": 400}, "Insufficient cpu"),
        ({"cpu": 400, "memory": 101}, "Insufficient cpu, Insufficient memory"),
        ({"nvidia.com/gpu": 1}, "Insufficient nvidia.com/gpu"),
    ]
    for requests, reason in cases:
        result = await assume_one(store, res("p", "n1", **requests))
        assert result == AssumeResult("conflict", {"cpu": 700, "pods": 1}, reason)
    assert await store.assumed() == {}
    assert await usage(store, "n1") == {"cpu": 700, "pods": 1}


@pytest.mark.parametrize(
    ("checked", "requests", "reason"),
    [
        (frozenset(), {"cpu": 400, "memory": 101, "example.com/gpu": 1}, ""),
        (frozenset({"memory"}), {"cpu": 400, "memory": 50}, ""),
        (frozenset({"memory"}), {"cpu": 400, "memory": 101}, "Insufficient memory"),
        (frozenset({"cpu"}), {"cpu": 400, "example.com/gpu": 1}, "Insufficient cpu"),
        (frozenset({"cpu"}), {"cpu": 300, "example.com/gpu": 1}, ""),
        (frozenset({"pods"}), {"cpu": 300}, "Too many pods"),
        (frozenset({"pods", "cpu"}), {"cpu": 400}, "Too many pods, Insufficient cpu"),
        (frozenset({"example.com/gpu"}), {"example.com/gpu": 1}, "Insufficient example.com/gpu"),
    ],
    ids=[
        "nothing-checked",
        "unchecked-pods-and-cpu-over",
        "checked-memory-over",
        "checked-cpu-over-unchecked-extended",
        "unchecked-extended",
        "pod-count-checked",
        "pod-count-and-cpu-checked",
        "checked-extended",
    ],
)
async def test_assume_vetoes_only_on_the_checked_resources(
    store: ClusterStore, checked: frozenset[str], requests: dict[str, int], reason: str
) -> None:
    """The profile's filters decide what the reservation may refuse on: a resource they
    do not check is charged in full but never vetoes (upstream's AssumePod never does)."""
    full = [
        node_entry(1, "n1", cpu=1000, memory=100, pods=2),
        pod_entry(2, "a", "n1", cpu=700, pods=1),
    ]
    await store.apply([*full, pod_entry(3, "b", "n1")])
    await store.set_leases({"uid-p": 1})
    result = await assume_one(store, res("p", "n1", checked=checked, **requests))
    before = {"cpu": 700, "pods": 2}
    if reason:
        assert result == AssumeResult("conflict", before, reason)
        assert await usage(store, "n1") == before
    else:
        assert result == AssumeResult("assumed")
        charged = {name: before.get(name, 0) + requests.get(name, 0) for name in before}
        assert await usage(store, "n1") == {**requests, **charged, "pods": 3}


async def test_assume_on_unknown_or_deleted_node(store: ClusterStore) -> None:
    await store.apply(
        [node_entry(1, "n1", pods=10), pod_entry(2, "a", "n1"), node_deleted(3, "n1")]
    )
    await store.set_leases({"uid-p": 1})
    for name in ("n1", "ghost"):
        result = await assume_one(store, res("p", name))
        assert (result.status, result.reason) == ("conflict", "node not found")
    assert result.usage == {}
    assert (await assume_one(store, res("p", "n1"))).usage == {"pods": 1}  # a still bound


async def test_assume_pod_count_limit(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=10_000, pods=2), pod_entry(2, "a", "n1", cpu=1)])
    await store.set_leases({"uid-p": 1, "uid-q": 1})
    no_pods_key = Reservation(uid="uid-p", node="n1", attempt=1, requests={"cpu": 1}, ttl=TTL)
    assert (await assume_one(store, no_pods_key)).status == "assumed"
    result = await assume_one(store, res("q", "n1"))
    assert result == AssumeResult("conflict", {"cpu": 2, "pods": 2}, "Too many pods")


async def test_assume_batch_is_checked_in_order(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    await store.set_leases({"uid-p": 1, "uid-q": 1})
    results = await store.assume([res("p", "n1", cpu=600), res("q", "n1", cpu=600)], NOW)
    assert [r.status for r in results] == ["assumed", "conflict"]
    assert results[1].usage == {"cpu": 600, "pods": 1}


async def test_assume_stale_without_current_lease(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    assert (await assume_one(store, res("p", "n1"))).status == "stale"  # no lease at all
    await store.set_leases({"uid-p": 2})
    assert (await assume_one(store, res("p", "n1", attempt=1))).status == "stale"
    assert await store.assumed() == {}
    assert await usage(store, "n1") == {}


async def test_reassume_same_attempt_is_idempotent(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    await store.set_leases({"uid-p": 1})
    for now in (NOW, NOW + 1):
        assert (await assume_one(store, res("p", "n1", cpu=600), now)).status == "assumed"
    assert await usage(store, "n1") == {"cpu": 600, "pods": 1}
    assert (await store.assumed())["uid-p"].deadline == NOW + TTL


async def test_newer_attempt_moves_the_assumption(store: ClusterStore) -> None:
    await store.apply(
        [node_entry(1, "n1", cpu=1000, pods=10), node_entry(2, "n2", cpu=1000, pods=10)]
    )
    await store.set_leases({"uid-p": 1})
    assert (await assume_one(store, res("p", "n1", cpu=600))).status == "assumed"
    await store.set_leases({"uid-p": 2})
    assert (await assume_one(store, res("p", "n2", attempt=2, cpu=600))).status == "assumed"
    assert await store.node_usage() == {"n1": {}, "n2": {"cpu": 600, "pods": 1}}
    assert (await assume_one(store, res("p", "n1", attempt=1, cpu=600))).status == "stale"
    assert {u: (a.node, a.attempt) for u, a in (await store.assumed()).items()} == {
        "uid-p": ("n2", 2)
    }


async def test_expired_assumptions_are_released(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=1)])
    await store.set_leases({"uid-p": 1, "uid-q": 1})
    assert (await assume_one(store, res("p", "n1", ttl=10))).status == "assumed"
    assert (await assume_one(store, res("q", "n1"), NOW + 10)).reason == "Too many pods"
    assert (await assume_one(store, res("q", "n1"), NOW + 10.5)).status == "assumed"
    assert set(await store.assumed()) == {"uid-q"}
    assert await usage(store, "n1") == {"pods": 1}


async def test_expired_reassume_is_checked_and_charged_once(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=1)])
    await store.set_leases({"uid-p": 1, "uid-q": 1})
    assert (await assume_one(store, res("p", "n1", ttl=10))).status == "assumed"
    assert (await assume_one(store, res("p", "n1"), NOW + 11)).status == "assumed"
    assert (await store.assumed())["uid-p"].deadline == NOW + 11 + TTL
    assert await usage(store, "n1") == {"pods": 1}
    assert (await assume_one(store, res("q", "n1"), NOW + 12)).reason == "Too many pods"


async def test_begin_bind_freezes_and_bound_pod_converts(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=2)])
    await store.set_leases({"uid-p": 1, "uid-q": 1})
    assert (await assume_one(store, res("p", "n1", cpu=600, ttl=5))).status == "assumed"
    assert await store.begin_bind(
        [claim("p", "n1", 2), claim("p", "n2"), claim("q", "n1")], NOW
    ) == [
        False,
        False,
        False,
    ]
    assert await store.begin_bind([claim("p", "n1"), claim("p", "n1")], NOW) == [True, True]
    assert (await store.assumed())["uid-p"].deadline == float("inf")
    later = NOW + 3600
    assert (await assume_one(store, res("q", "n1", cpu=600), later)).reason == "Insufficient cpu"
    assert (await assume_one(store, res("p", "n1", cpu=600), later)).status == "stale"

    await store.apply([pod_entry(2, "p", "n1", cpu=600)])
    assert await usage(store, "n1") == {"cpu": 600, "pods": 1}
    assert await store.assumed() == {}
    assert "uid-p" not in await store.leases()
    assert await store.begin_bind([claim("p", "n1")], NOW) == [False]
    assert (await assume_one(store, res("p", "n1"))).reason == "attempt is not the pod's lease"
    await store.set_leases({"uid-p": 1})
    assert (await assume_one(store, res("p", "n1"))).reason == "pod is bound"


async def test_begin_bind_never_claims_an_expired_assumption(store: ClusterStore) -> None:
    """Every replica's snapshot forgets an assumption at its deadline: a binder that
    claimed it later would bind a pod the others no longer count."""
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    await store.set_leases({"uid-p": 1, "uid-q": 1})
    await store.assume([res("p", "n1", cpu=600, ttl=5), res("q", "n1", cpu=100, ttl=5)], NOW)
    assert await store.begin_bind([claim("q", "n1")], NOW + 5) == [True]  # at the deadline
    assert await store.begin_bind([claim("p", "n1"), claim("q", "n1")], NOW + 6) == [False, True]
    assert set(await store.assumed()) == {"uid-q"}
    assert await usage(store, "n1") == {"cpu": 100, "pods": 1}


async def test_bound_elsewhere_releases_the_assumption(store: ClusterStore) -> None:
    await store.apply(
        [node_entry(1, "n1", cpu=1000, pods=10), node_entry(2, "n2", cpu=1000, pods=10)]
    )
    await store.set_leases({"uid-p": 1})
    await store.assume([res("p", "n1", cpu=600)], NOW)
    assert await store.begin_bind([claim("p", "n1")], NOW) == [True]
    await store.apply([pod_entry(3, "p", "n2", cpu=600)])
    assert await store.node_usage() == {"n1": {}, "n2": {"cpu": 600, "pods": 1}}
    assert await store.assumed() == {}


async def test_pod_deletion_releases_everything(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", "n1", cpu=300)])
    await store.set_leases({"uid-a": 4, "uid-p": 1})
    await store.set_nominations({"uid-a": Nomination("n1", 10), "uid-p": Nomination("n1", 5)})
    await store.assume([res("p", "n1", cpu=200)], NOW)
    assert await usage(store, "n1") == {"cpu": 500, "pods": 2}

    await store.apply(
        [pod_entry(3, "a", None, deleted=True), pod_entry(4, "p", None, deleted=True)]
    )
    assert await usage(store, "n1") == {}
    assert await store.assumed() == {}
    assert await store.leases() == {}
    assert await store.nominations() == {}
    assert await store.objects("pod") == {}


CLAIMS = {
    "a free node: recorded, its lower-priority nomination cleared": (
        {"low": Nomination("n1", 5)},
        [NominationClaim("p", "n1", 10, clears=("low",))],
        [],
        {"p": Nomination("n1", 10)},
    ),
    "another replica nominated an equal-priority pod there meanwhile: refused": (
        {"other": Nomination("n1", 10)},
        [NominationClaim("p", "n1", 10)],
        ["p"],
        {"other": Nomination("n1", 10)},
    ),
    "the same pod, seen when deciding: recorded": (
        {"other": Nomination("n1", 10)},
        [NominationClaim("p", "n1", 10, seen=frozenset({"other"}))],
        [],
        {"other": Nomination("n1", 10), "p": Nomination("n1", 10)},
    ),
    "a lower-priority pod there, unseen: it does not keep the room": (
        {"low": Nomination("n1", 9)},
        [NominationClaim("p", "n1", 10)],
        [],
        {"low": Nomination("n1", 9), "p": Nomination("n1", 10)},
    ),
    "another node's nomination does not matter; the pod's own is replaced": (
        {"other": Nomination("n2", 99), "p": Nomination("n3", 10)},
        [NominationClaim("p", "n1", 10)],
        [],
        {"other": Nomination("n2", 99), "p": Nomination("n1", 10)},
    ),
    "two claims in one call: the second did not see the first": (
        {},
        [NominationClaim("a", "n1", 10), NominationClaim("b", "n1", 10)],
        ["b"],
        {"a": Nomination("n1", 10)},
    ),
    "a refused claim clears nothing": (
        {"other": Nomination("n1", 10), "low": Nomination("n1", 1)},
        [NominationClaim("p", "n1", 10, clears=("low",))],
        ["p"],
        {"other": Nomination("n1", 10), "low": Nomination("n1", 1)},
    ),
}


@pytest.mark.parametrize(("held", "claims", "lost", "after"), CLAIMS.values(), ids=CLAIMS.keys())
async def test_claim_nominations(
    store: ClusterStore,
    held: dict[str, Nomination],
    claims: list[NominationClaim],
    lost: list[str],
    after: dict[str, Nomination],
) -> None:
    await store.set_nominations(held)
    assert await store.claim_nominations(claims) == lost
    assert await store.nominations() == after


async def test_terminal_pod_releases_its_charge(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", "n1", cpu=300)])
    await store.apply([pod_entry(3, "a", None, cpu=300)])  # Succeeded or Failed: no charge
    assert await usage(store, "n1") == {}
    assert "default/a" in await store.objects("pod")


async def test_forget_releases_only_that_assumption(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    await store.set_leases({"uid-p": 2})
    await store.assume([res("p", "n1", attempt=2, cpu=600)], NOW)
    await store.forget([claim("p", "n1", attempt=1), claim("p", "n2", attempt=2)])
    assert set(await store.assumed()) == {"uid-p"}
    assert await store.begin_bind([claim("p", "n1", 2)], NOW) == [True]
    await store.forget([claim("p", "n1", attempt=2)])
    await store.forget([claim("p", "n1", attempt=2)])
    assert await store.assumed() == {}
    assert await usage(store, "n1") == {}


async def test_leases_and_nominations(store: ClusterStore) -> None:
    await store.set_leases({"a": 1, "b": 2})
    await store.set_leases({"a": 3})
    await store.drop_leases(["b", "missing"])
    await store.drop_leases([])
    assert await store.leases() == {"a": 3}
    await store.set_nominations({"a": Nomination("n1", 100), "b": Nomination("n2", -5)})
    await store.clear_nominations(["a"])
    assert await store.nominations() == {"b": Nomination("n2", -5)}


@pytest.mark.parametrize(
    ("checked", "requests"),
    [
        (None, {"cpu": 1000}),
        (frozenset({"pods", "cpu"}), {"cpu": 1000, "memory": 1}),
        (frozenset({"cpu"}), {"cpu": 1000, "memory": 1}),
    ],
    ids=["every-resource", "profile-checks-cpu-and-pods", "profile-checks-cpu-only"],
)
async def test_racing_clients_never_overcommit(
    clients: Clients, checked: frozenset[str] | None, requests: dict[str, int]
) -> None:
    """What the profile checks (cpu) is never overcommitted by racing replicas; memory,
    which the pods request but the profile does not check, is charged past the node's."""
    first, second = clients.open(), clients.open()
    await first.apply([node_entry(1, "n1", cpu=60_000, memory=10, pods=110)])
    names = {c: [f"{c}{i}" for i in range(50)] for c in "ab"}
    await first.set_leases({f"uid-{n}": 1 for group in names.values() for n in group})

    async def race(store: ClusterStore, group: list[str]) -> list[str]:
        statuses: list[str] = []
        for name in group:
            reservation = res(name, "n1", checked=checked, **requests)
            statuses.append((await assume_one(store, reservation)).status)
            assert (await usage(store, "n1")).get("cpu", 0) <= 60_000
            await anyio.lowlevel.checkpoint()  # let the other client in (memory)
        return statuses

    results = await asyncio.gather(race(first, names["a"]), race(second, names["b"]))
    statuses = results[0] + results[1]
    assert statuses.count("assumed") == 60
    assert statuses.count("conflict") == 40
    charged = {name: amount * 60 for name, amount in requests.items()}
    assert await usage(second, "n1") == {**charged, "pods": 60}
    assert len(await first.assumed()) == 60


def test_open_store_picks_the_backend() -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    with pytest.raises(ValueError, match="unsupported store URL"):
        open_store("etcd://x")


async def test_queue_view_is_replaced_and_read_back(store: ClusterStore) -> None:
    assert await store.queue_view() is None
    await store.put_queue_view(b'{"kind":"QueueView","at":1.0,"counts":{"active":1}}')
    await store.put_queue_view(b'{"kind":"QueueView","at":2.0,"counts":{"active":0}}')
    assert await store.queue_view() == b'{"kind":"QueueView","at":2.0,"counts":{"active":0}}'


async def test_evictions_are_recorded_until_the_pod_is_deleted(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", "n1", cpu=100)])
    await store.record_evictions({"uid-a": "default/a", "uid-b": "default/b"})
    assert await store.evictions() == {"uid-a": "default/a", "uid-b": "default/b"}
    await store.apply([pod_entry(3, "a", None, deleted=True)])
    assert await store.evictions() == {"uid-b": "default/b"}
    await store.drop_evictions(["uid-b"])
    assert await store.evictions() == {}
