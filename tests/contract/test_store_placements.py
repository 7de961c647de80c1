"""The ClusterStore contract for placement versions (what a decision read and what its
placement touches, scheduler.domains), run against MemoryStore and RedisStore alike."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from services.common.store import (
    VOIDED,
    ClusterStore,
    Reservation,
)
from tests.contract.store_support import (
    NOW,
    Clients,
    assume_one,
    node_entry,
    res,
)


def placed(
    name: str, on: str, reads: Mapping[str, int] | None = None, touches: tuple[str, ...] = ()
) -> Reservation:
    """A one-cpu reservation of pod ``name`` that read and touches placement domains."""
    return dataclasses.replace(res(name, on, cpu=1), reads=dict(reads or {}), touches=touches)


ZONE_A, ZONE_B, N1 = "zone=a", "zone=b", "node:n1"
# Each case: calls of assume (each a list of reservations) → statuses, the reason and
# versions of the last answer, and the store's versions after.
Versions = dict[str, int]
PLACEMENT_VERSIONS: dict[
    str, tuple[list[list[Reservation]], list[str], str, Versions, Versions]
] = {
    "nothing read, every touch raised": (
        [[placed("p", "n1", touches=(N1, ZONE_A))]],
        ["assumed"], "", {}, {N1: 1, ZONE_A: 1},
    ),
    "a read at the current version": (
        [[placed("p", "n1", touches=(N1, ZONE_A))], [placed("q", "n2", {ZONE_A: 1}, (ZONE_A,))]],
        ["assumed", "assumed"], "", {}, {N1: 1, ZONE_A: 2},
    ),
    "a read of a domain another placement moved": (
        [[placed("p", "n1", touches=(N1, ZONE_A))], [placed("q", "n2", {ZONE_A: 0, ZONE_B: 0})]],
        ["assumed", "conflict"], "placements changed in zone=a", {ZONE_A: 1, ZONE_B: 0},
        {N1: 1, ZONE_A: 1},
    ),
    "several moved domains, named in order": (
        [[placed("p", "n1", touches=(N1, ZONE_B, ZONE_A))],
         [placed("q", "n1", {ZONE_B: 0, N1: 0, ZONE_A: 1})]],
        ["assumed", "conflict"], "placements changed in node:n1, zone=b",
        {ZONE_B: 1, N1: 1, ZONE_A: 1}, {N1: 1, ZONE_A: 1, ZONE_B: 1},
    ),
    "a later reservation of the same call sees the earlier one's touches": (
        [[placed("p", "n1", touches=(ZONE_A,)), placed("q", "n2", {ZONE_A: 1}, (ZONE_A,)),
          placed("r", "n2", {ZONE_A: 1})]],
        ["assumed", "assumed", "conflict"], "placements changed in zone=a", {ZONE_A: 2},
        {ZONE_A: 2},
    ),
    "a refused reservation touches nothing": (
        [[placed("p", "n1", {ZONE_A: 5}, (ZONE_A, N1))]],
        ["conflict"], "placements changed in zone=a", {ZONE_A: 0}, {},
    ),
    "assumed again: the same attempt touches again": (
        [[placed("p", "n1", touches=(N1,))], [placed("p", "n1", {N1: 7}, (N1,))]],
        ["assumed", "assumed"], "", {}, {N1: 2},
    ),
    # Another replica placed r; p counted nothing there, q counted p: were q checked
    # alone, r would stand in for the refused p.
    "a refusal voids the later reservations of the call that read a domain it touched": (
        [[placed("r", "n1", touches=(ZONE_A,))],
         [placed("p", "n2", {ZONE_A: 0}, (ZONE_A,)), placed("q", "n2", {ZONE_A: 1}, (ZONE_A,))]],
        ["assumed", "conflict", "conflict"], VOIDED, {ZONE_A: 1}, {ZONE_A: 1},
    ),
    "a refusal leaves the later reservations that read nothing it touched": (
        [[placed("p", "n1", {ZONE_A: 5}, (ZONE_A,)), placed("q", "n2", touches=(ZONE_B,)),
          placed("r", "n2", {ZONE_B: 1, N1: 0})]],
        ["conflict", "assumed", "assumed"], "", {}, {ZONE_B: 1},
    ),
    "a stale reservation voids the later ones too": (
        [[dataclasses.replace(placed("p", "n1", touches=(ZONE_B,)), attempt=9),
          placed("q", "n2", {ZONE_B: 0})]],
        ["stale", "conflict"], VOIDED, {ZONE_B: 0}, {},
    ),
    "resources are checked first": (
        [[dataclasses.replace(placed("p", "n1", {ZONE_A: 3}), requests={"cpu": 5000})]],
        ["conflict"], "Insufficient cpu", {}, {},
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("calls", "statuses", "reason", "versions", "after"),
    PLACEMENT_VERSIONS.values(),
    ids=PLACEMENT_VERSIONS.keys(),
)
async def test_placement_versions(
    store: ClusterStore,
    calls: list[list[Reservation]],
    statuses: list[str],
    reason: str,
    versions: dict[str, int],
    after: dict[str, int],
) -> None:
    """A reservation commits only if no pod was placed since in a domain its decision
    read (another replica's placement); every committed one raises what it touches."""
    await store.apply(
        [node_entry(1, "n1", cpu=1000, pods=10), node_entry(2, "n2", cpu=1000, pods=10)]
    )
    await store.set_leases({f"uid-{n}": 1 for n in "pqr"})
    answers = [a for call in calls for a in await store.assume(call, NOW)]
    assert [a.status for a in answers] == statuses
    assert (answers[-1].reason, dict(answers[-1].versions)) == (reason, versions)
    assert await store.domain_versions() == after


async def test_a_decision_that_knew_no_placed_anti_affinity_key_is_refused(
    store: ClusterStore,
) -> None:
    """A pod with required anti-affinity on ``zone`` was placed: a decision whose
    replica knew of no such key read no zone domain, so it may break that pod's terms."""
    await store.apply(
        [node_entry(1, "n1", cpu=1000, pods=10), node_entry(2, "n2", cpu=1000, pods=10)]
    )
    await store.set_leases({f"uid-{n}": 1 for n in "pqr"})
    anti = dataclasses.replace(placed("p", "n1", touches=(ZONE_A,)), keys=("zone",))
    assert (await assume_one(store, anti)).status == "assumed"
    blind = dataclasses.replace(placed("q", "n2", {N1: 0}), watched=frozenset({"host"}))
    refused = await assume_one(store, blind)
    assert (refused.status, refused.keys, dict(refused.versions)) == (
        "conflict",
        ("zone",),
        {N1: 0},
    )
    assert refused.reason == "pods with required anti-affinity on zone placed"
    knowing = dataclasses.replace(blind, watched=frozenset({"host", "zone"}))
    assert (await assume_one(store, knowing)).status == "assumed"
    unchecked = placed("r", "n2")  # watched None: not checked
    assert (await assume_one(store, unchecked)).status == "assumed"


async def test_placement_versions_are_shared_by_every_client(clients: Clients) -> None:
    one, two = clients.open(), clients.open()
    await one.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    await one.set_leases({"uid-p": 1, "uid-q": 1})
    assert (await assume_one(one, placed("p", "n1", touches=(N1,)))).status == "assumed"
    refused = await assume_one(two, placed("q", "n1", {N1: 0}, (N1,)))
    assert (refused.status, dict(refused.versions)) == ("conflict", {N1: 1})
    assert await two.domain_versions() == {N1: 1}
    assert (await assume_one(two, placed("q", "n1", {N1: 1}, (N1,)))).status == "assumed"
    assert await one.domain_versions() == {N1: 2}
