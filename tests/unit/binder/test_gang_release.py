"""A pod that held room and gave it up in the binding cycle frees it for others
(upstream's ``handleBindingCycleError``: Unreserve, ForgetPod, then the queue moves the
pods an assigned pod's deletion may help, the rejected pod itself left out), on the
embedded services with a FakeClock.

The case from issue 30: one node with 2 CPUs, a PodGroup with ``minMember: 3`` whose
members ask 1 CPU each, and a pod that needs the whole node. The gang cannot complete;
however it gives up — rejected by Coscheduling's PostFilter, by its Permit timeout (a
group that failed then sorts by its failure time, behind the pod), or (for a lone
waiting pod) by an ExternalPermit reject — the whole-node pod binds."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from contracts.k8s import Pod
from tests.builders import make_pod
from tests.unit.binder.permit_support import NODE, Run, config, group, member

SETTLE_BOUND = 30.0
"""Real seconds a run may take to settle (it takes well under one)."""


def whole_node(name: str = "big", **labels: str) -> Pod:
    return make_pod(name, requests={"cpu": "2"}, labels=labels)


def gang() -> list[Any]:
    return [group("g", 3, "2023-01-01T00:00:00Z"), *(member(f"m{i}", "g") for i in range(3))]


@dataclass(frozen=True)
class Case:
    name: str
    profiles: Any
    docs: list[Any]
    given_up: str
    """A message some gang member (or the waiting pod) failed with on the way."""
    reject: str | None = None
    """The pod an ExternalPermit reject is sent for once the run is quiet."""


CASES = [
    Case(
        "rejected at PostFilter",
        config(gang=3),
        [NODE % 1, *gang(), whole_node()],
        "0/1 nodes are available: 1 optimistic rejection in PostFilter.",
    ),
    Case(
        "rejected by the Permit timeout",
        config(gang=3, gang_post_filter=False),
        [NODE % 1, *gang(), whole_node()],
        "0/1 nodes are available: 1 rejected due to timeout after waiting 3s at plugin "
        "Coscheduling.",
    ),
    Case(
        "rejected by ExternalPermit",
        config(external=300),
        [NODE % 1, whole_node("gated", gate="on"), whole_node()],
        "0/1 nodes are available: 1 not today.",
        reject="gated",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_a_pod_that_gives_its_room_back_lets_the_whole_node_pod_bind(case: Case) -> None:
    run = Run(case.profiles)
    await run.start(*case.docs)
    try:
        if case.reject is not None:
            await run.idle()
            assert run.last()["default/big"].kind == "FailedScheduling"
            await run.decide("reject", case.reject, message="not today")
        await asyncio.wait_for(run.cluster.settle(), SETTLE_BOUND)
        last = run.last()
        assert last["default/big"].kind == "Binding", last["default/big"].message
        assert case.given_up in {d.message for d in run.decisions}
        others = {p: d.kind for p, d in last.items() if p != "default/big"}
        assert others and set(others.values()) == {"FailedScheduling"}
        assert await run.cluster.store.waiting() == {}
        usage = await run.cluster.store.node_usage(["n1"])
        assert usage["n1"].get("cpu", 0) == 2000  # the whole-node pod, nothing else
    finally:
        await run.stop()


async def test_a_gang_that_can_never_complete_ends_the_run() -> None:
    """Alone, the gang retries for ever (each member that waits activates its
    siblings, each rejection gives the room back); the run stops when the cluster no
    longer changes, with every member failed and nothing held."""
    run = Run(config(gang=3))
    await run.start(NODE % 1, *gang())
    try:
        await asyncio.wait_for(run.cluster.settle(), SETTLE_BOUND)
        assert {d.kind for d in run.last().values()} == {"FailedScheduling"}
        assert len(run.last()) == 3
        assert await run.cluster.store.waiting() == {}
        assert await run.cluster.store.assumed() == {}
    finally:
        await run.stop()
