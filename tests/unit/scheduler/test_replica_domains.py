"""Two scheduler replicas deciding from snapshots that lack each other's newest
placement: the second one's decision read a domain (the node, its topology domain, a
ReadWriteOncePod claim) in which the first placed a pod, so the store refuses it; the
replica brings its snapshot up to the store (it assumes the other's pod) and schedules
the pod again, now honouring the constraint. Without the domains the reservation reads
(the guard removed) the same race breaks the constraint: the cases show it can."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from contracts.k8s import Node, Pod, Toleration
from services.common.store import AssumeResult, MemoryStore, Reservation
from services.scheduler.cycle import BatchOutcome, BatchScheduler
from services.scheduler.domains import PlacementVersions
from tests.builders import make_pod
from tests.builders.constraints import (
    WEB,
    anti_affine,
    grouped,
    ported,
    rwop,
    rwop_objects,
    spread,
    with_spec,
)
from tests.builders.constraints import zoned_node as node
from tests.builders.scheduling import batch_scheduler, loaded_cache, schedule_request, store_node
from tests.builders.volumes import inline_volume

RWOP_OBJECTS = rwop_objects()


def with_disk(name: str) -> Pod:
    return make_pod(name, volumes=[inline_volume("gce_persistent_disk", pdName="disk-1")])


class Blind(PlacementVersions):
    """Decisions that read no domain: the store checks resources only."""

    def reads(self, *args: Any, **kwargs: Any) -> list[str]:
        return []


@dataclass(frozen=True)
class Case:
    nodes: Sequence[Node]
    pending: tuple[Pod, Pod]
    bound: Sequence[Pod] = ()
    objects: dict[str, list[object]] | None = None


CASES = {
    # One node: the first replica's pod takes it; the second's may not share it.
    "required anti-affinity on the hostname": Case(
        [node("n1")], (anti_affine("a"), anti_affine("b"))
    ),
    # Zones z1 (n1, empty), z2 (n2, tainted: counted, never chosen), z3 (one pod):
    # the first pod can only go to z1; a second there would make z1 - z2 = 2.
    "topology spread maxSkew 1 across three zones": Case(
        [node("n1", "z1"), node("n2", "z2", tainted=True), node("n3", "z3")],
        (spread("a"), spread("b")),
        bound=[spread("old", node_name="n3")],
    ),
    "host ports": Case([node("n1")], (ported("a"), ported("b"))),
    # No pod of the group anywhere: each replica's first pod may go to any zone. Once
    # a is in z1, b must follow it there, and n2 is in z2.
    "required pod affinity, first pod of the group": Case(
        [node("n1", "z1"), node("n2", "z2")],
        (grouped("a", only_on="n1"), grouped("b", only_on="n2")),
    ),
    # VolumeRestrictions: one node may not mount the same disk for two pods (and
    # NodeVolumeLimits counts a node's attachable volumes the same way).
    "a disk two pods may not share on a node": Case(
        [node("n1")], (with_disk("a"), with_disk("b"))
    ),
    "a ReadWriteOncePod claim": Case(
        [node("n1"), node("n2")], (rwop("a"), rwop("b")), objects=RWOP_OBJECTS
    ),
}  # fmt: skip


def replica(store: MemoryStore, case: Case, *, guarded: bool) -> BatchScheduler:
    snapshot = loaded_cache(case.nodes, case.bound, case.objects or {})
    scheduler, _ = batch_scheduler(snapshot, store, case.pending)
    if not guarded:  # the mutation: decisions read no domain
        scheduler.versions = Blind()
        scheduler.versions.watch(case.pending)
    return scheduler


async def race(case: Case, *, guarded: bool) -> tuple[BatchOutcome, BatchOutcome]:
    store = MemoryStore()
    for n in case.nodes:
        await store_node(store, n)
    await store.set_leases({p.metadata.uid or "": 1 for p in case.pending})
    first, second = (replica(store, case, guarded=guarded) for _ in range(2))
    won = await first.run([schedule_request(case.pending[0])])
    raced = await second.run([schedule_request(case.pending[1])])
    return won, raced


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_the_second_replica_is_refused_and_honours_the_constraint(case: Case) -> None:
    won, raced = await race(case, guarded=True)
    assert [b.name for b in won.binds] == ["a"]
    assert raced.binds == []
    assert raced.domain_conflicts == 1
    [failure] = raced.failures
    assert failure.result.outcome == "unschedulable", failure.result.message


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_without_the_domains_the_same_race_breaks_the_constraint(case: Case) -> None:
    won, raced = await race(case, guarded=False)
    assert [b.name for b in won.binds] == ["a"]
    assert [b.name for b in raced.binds] == ["b"]  # a violation the store let through
    assert raced.domain_conflicts == 0


async def test_one_replica_alone_is_never_refused() -> None:
    case = Case([node(f"n{i}") for i in range(3)], (anti_affine("a"), anti_affine("b")))
    store = MemoryStore()
    for n in case.nodes:
        await store_node(store, n)
    await store.set_leases({p.metadata.uid or "": 1 for p in case.pending})
    alone = replica(store, case, guarded=True)
    first = await alone.run([schedule_request(case.pending[0])])
    second = await alone.run([schedule_request(case.pending[1])])
    assert (first.domain_conflicts, second.domain_conflicts) == (0, 0)
    nodes = {b.node for b in first.binds + second.binds}
    assert len(nodes) == 2


class Unchecked(MemoryStore):
    """The mutation: the store is not told which anti-affinity keys a decision knew."""

    async def assume(self, reservations: Sequence[Reservation], now: float) -> list[AssumeResult]:
        unchecked = [dataclasses.replace(r, watched=None) for r in reservations]
        return await super().assume(unchecked, now)


@pytest.mark.parametrize("guarded", [True, False])
async def test_a_replica_that_never_saw_an_anti_affine_pod_learns_its_key(guarded: bool) -> None:
    """The second replica's feed is behind: it has not watched ``a`` (required
    anti-affinity to app=web on the hostname), so its decision for ``b`` (app=web, no
    constraint of its own) reads no hostname domain. The store knows a pod with
    anti-affinity on the hostname was placed: the reservation is refused, the replica
    reads that key from then on and finds ``a`` on the only node."""
    case = Case([node("n1")], (anti_affine("a"), make_pod("b", labels=WEB)))
    store = MemoryStore() if guarded else Unchecked()
    await store_node(store, case.nodes[0])
    await store.set_leases({p.metadata.uid or "": 1 for p in case.pending})
    first, second = (replica(store, case, guarded=True) for _ in range(2))
    second.versions.watched.clear()  # a's entry not applied yet: its key unknown
    won = await first.run([schedule_request(case.pending[0])])
    raced = await second.run([schedule_request(case.pending[1])])
    assert [b.name for b in won.binds] == ["a"]
    if guarded:
        assert (raced.binds, raced.domain_conflicts) == ([], 2)  # the key, then hostname=n1
        [failure] = raced.failures
        assert failure.result.outcome == "unschedulable", failure.result.message
    else:
        assert [b.name for b in raced.binds] == ["b"]  # a violation the store let through


async def test_a_spread_decision_that_counted_a_refused_pod_of_its_batch_is_voided() -> None:
    """Zones z1 (empty), z2 and z3 (one pod each), maxSkew 1. In one batch ``j`` goes to
    z1, then ``k`` (n1 and n3 are tainted for it, still counted) to z2: skew 1 with
    ``j`` counted. ``j``'s reservation is refused (its lease is stale), so z1 stays
    empty and ``k`` in z2 would make the skew 2: ``k`` read z1 (its batch-mate's
    domain), so the store voids it with ``j``, and scheduled again it fits nowhere."""
    nodes = [node("n1", "z1", tainted=True), node("n2", "z2"), node("n3", "z3", tainted=True)]
    tolerates = Toleration(key="dedicated", operator="Equal", value="other", effect="NoSchedule")
    j = with_spec(spread("j"), tolerations=[tolerates])
    k = spread("k")
    cache = loaded_cache(nodes, [spread("old2", "n2"), spread("old3", "n3")])
    store = MemoryStore()
    for n in nodes:
        await store_node(store, n)
    await store.set_leases({"default-j-uid": 2, "default-k-uid": 1})  # j's attempt 1: stale
    scheduler, _ = batch_scheduler(cache, store, [j, k])
    outcome = await scheduler.run([schedule_request(j), schedule_request(k)])
    assert outcome.binds == []
    results = {f.request.name: f.result.outcome for f in outcome.failures}
    assert results == {"j": "stale", "k": "unschedulable"}
