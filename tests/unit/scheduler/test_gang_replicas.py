"""Pod groups racing for room on several scheduler replicas end as on one scheduler.

Each gang (minMember 3, 1 cpu per member) has two members waiting at Permit and the
room is full; then every gang's last member is scheduled at the same moment, each on a
view that still counts the others' reservations, so each fails and its PostFilter
(Coscheduling) gives its own gang up. A gate holds every replica's rejection until all
have decided theirs, so no timing decides the outcome. One scheduler would have
rejected the first gang, and the next last member would have found its room: so here
exactly one gang is rejected and the room it freed completes as many others as fit.
The end state is checked against every hard constraint, not against counts of retries.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from services.framework.plugins.coscheduling.plugin import REJECTED_AFTER_POST_FILTER
from tests.unit.scheduler.gang_support import Replicas, member, node, pod_group

SETTLE_BOUND = 30.0
"""Real seconds the replicas may take (they take well under one)."""


@dataclass(frozen=True)
class Case:
    name: str
    gangs: tuple[str, ...]
    nodes: int
    """Nodes of 2 cpu: room for two members of every gang, not one more."""
    replicas: int
    first: tuple[tuple[str, ...], ...]
    """Batch ``i`` goes to replica ``i``: each gang's first two members."""
    last: tuple[tuple[str, ...], ...]
    """Then, all at once: the last members."""
    completed: int
    """Gangs bound whole, as one scheduler trying the last members in turn would."""
    refused: int
    """Rejections the store refused (``ksched_store_release_conflicts_total``, all
    replicas): every gang's but the first's, whose release came first."""


CASES = [
    Case(
        "two replicas, one last member each",
        ("red", "blue"),
        nodes=2,
        replicas=2,
        first=(("red-0", "red-1"), ("blue-0", "blue-1")),
        last=(("red-2",), ("blue-2",)),
        completed=1,
        refused=1,
    ),
    Case(
        "one replica, both last members in one batch",
        ("red", "blue"),
        nodes=2,
        replicas=1,
        first=(("red-0", "red-1", "blue-0", "blue-1"),),
        last=(("red-2", "blue-2"),),
        completed=1,
        refused=1,
    ),
    Case(
        "three replicas, three gangs: the room one frees completes the two others",
        ("red", "blue", "green"),
        nodes=3,
        replicas=3,
        first=(("red-0", "red-1"), ("blue-0", "blue-1"), ("green-0", "green-1")),
        last=(("red-2",), ("blue-2",), ("green-2",)),
        completed=2,
        refused=2,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_gangs_whose_last_members_fail_at_once_end_as_on_one_scheduler(case: Case) -> None:
    run = Replicas(case.replicas)
    pods = [member(f"{gang}-{i}", gang) for gang in case.gangs for i in range(3)]
    nodes = [node(f"n{i}", cpu="2") for i in range(case.nodes)]
    await run.start(nodes, [pod_group(gang, 3) for gang in case.gangs], pods)
    try:
        async with asyncio.timeout(SETTLE_BOUND):
            await run.schedule(*case.first)
            waiting = await run.store.waiting()
            assert sorted(r.name for r in waiting.values()) == sorted(sum(case.first, ()))
            await run.schedule(*case.last)

        binds, results = run.binds(), run.results()
        completed = [g for g in case.gangs if f"{g}-2" in binds]
        rejected = [g for g in case.gangs if g not in completed]
        assert len(completed) == case.completed, results
        assert len(rejected) == len(case.gangs) - case.completed
        states = {r.name: r.state for r in (await run.store.waiting()).values()}
        assumed = await run.store.assumed()
        for gang in completed:
            assert states[f"{gang}-0"] == states[f"{gang}-1"] == "allowed"
            assert {run.uid(f"{gang}-{i}") for i in range(3)} <= assumed.keys()
        for gang in rejected:
            assert states[f"{gang}-0"] == states[f"{gang}-1"] == "rejected"
            last = results[f"{gang}-2"]
            assert last.outcome == "unschedulable"
            assert last.message.endswith(
                f"PodGroup default/{gang} gets rejected due to Pod {gang}-2 "
                f"{REJECTED_AFTER_POST_FILTER}"
            )
            assert not {run.uid(f"{gang}-{i}") for i in range(3)} & assumed.keys()

        # The hard constraints, on the store's final state: every node within its
        # allocatable, and charged exactly what is reserved on it.
        usage = await run.store.node_usage()
        for n in nodes:
            on_node = [a for a in assumed.values() if a.node == n.metadata.name]
            cpu = sum(a.requests.get("cpu", 0) for a in on_node)
            assert usage.get(n.metadata.name, {}).get("cpu", 0) == cpu <= 2000
        assert len(assumed) == 3 * case.completed
        assert run.release_conflicts() == case.refused
    finally:
        await run.stop()
