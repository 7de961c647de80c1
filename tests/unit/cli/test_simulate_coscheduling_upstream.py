"""scheduler-plugins' Coscheduling integration scenarios (test/integration/
coscheduling_test.go at 903da7d: TestCoschedulingPlugin, TestPodCompleted,
TestPodgroupBackoff) as ``ksched simulate`` cases, with the profile those tests build.

Upstream creates each case's PodGroups, then its pods in order, and polls until the
expected pods are scheduled; simulate queues every pending pod before the first attempt,
in file order, and runs Permit's waits and the group backoff on its fake clock until no
pod can make progress. Each case asserts the exact set of bound pods: upstream's
expected pods are bound and every other pod of the case stays pending."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.unit.cli.coscheduling_support import (
    HIGH_PRIORITY,
    MID_PRIORITY,
    bound_pods,
    node,
    pod,
    pod_group,
    upstream_profiles,
)

# TestCoschedulingPlugin's node: 300 bytes of memory, 32 pods, no CPU.
FAKE_NODE = node("fake-node", memory="300")


def mem(name: str, group: str | None, memory: str, priority: int = MID_PRIORITY) -> str:
    return pod(name, group, priority=priority, memory=memory)


@dataclass(frozen=True)
class Case:
    pods: tuple[str, ...]
    pod_groups: tuple[str, ...]
    expected: frozenset[str]
    """Upstream's expectedPods; every other pod of the case stays pending."""


def case(pods: list[str], groups: list[str], expected: set[str]) -> Case:
    return Case(tuple(pods), tuple(groups), frozenset(expected))


PLUGIN_CASES = {
    "equal priority, sequentially pg1 meet min and pg2 not meet min": case(
        [mem(f"t1-p1-{i}", "pg1-1", "50") for i in (1, 2, 3)]
        + [mem(f"t1-p2-{i}", "pg1-2", "100") for i in (1, 2, 3, 4)],
        [pod_group("pg1-1", 3), pod_group("pg1-2", 4)],
        {"t1-p1-1", "t1-p1-2", "t1-p1-3"},
    ),
    "equal priority, not sequentially pg1 meet min and pg2 not meet min": case(
        [
            mem("t2-p1-1", "pg2-1", "50"),
            mem("t2-p2-1", "pg2-2", "100"),
            mem("t2-p1-2", "pg2-1", "50"),
            mem("t2-p2-2", "pg2-2", "100"),
            mem("t2-p1-3", "pg2-1", "50"),
            mem("t2-p2-3", "pg2-2", "100"),
            mem("t2-p2-4", "pg2-2", "100"),
        ],
        [pod_group("pg2-1", 3), pod_group("pg2-2", 4)],
        {"t2-p1-1", "t2-p1-2", "t2-p1-3"},
    ),
    "equal priority, not sequentially pg1 not meet min and 3 regular pods": case(
        [
            mem("t3-p1-1", "pg3-1", "50"),
            mem("t3-p2", None, "100"),
            mem("t3-p1-2", "pg3-1", "50"),
            mem("t3-p3", None, "100"),
            mem("t3-p1-3", "pg3-1", "50"),
        ],
        [pod_group("pg3-1", 4)],
        {"t3-p2", "t3-p3"},
    ),
    "different priority, sequentially pg1 meet min and pg2 meet min": case(
        [mem(f"t4-p1-{i}", "pg4-1", "100") for i in (1, 2, 3)]
        + [mem(f"t4-p2-{i}", "pg4-2", "50", HIGH_PRIORITY) for i in (1, 2, 3)],
        [pod_group("pg4-1", 3), pod_group("pg4-2", 3)],
        {"t4-p2-1", "t4-p2-2", "t4-p2-3"},
    ),
    "different priority, not sequentially pg1 meet min and pg2 meet min": case(
        [
            p
            for i in (1, 2, 3)
            for p in (
                mem(f"t5-p1-{i}", "pg5-1", "100"),
                mem(f"t5-p2-{i}", "pg5-2", "50", HIGH_PRIORITY),
            )
        ],
        [pod_group("pg5-1", 3), pod_group("pg5-2", 3)],
        {"t5-p2-1", "t5-p2-2", "t5-p2-3"},
    ),
    "different priority, not sequentially pg1 meet min and 3 regular pods": case(
        [
            p
            for i in (1, 2, 3)
            for p in (
                mem(f"t6-p1-{i}", "pg6-1", "50"),
                mem(f"t6-p{i + 1}", None, "100", HIGH_PRIORITY),
            )
        ],
        [pod_group("pg6-1", 3)],
        {"t6-p2", "t6-p3", "t6-p4"},
    ),
    "equal priority, not sequentially pg1 meet min and p2 p3 not meet min": case(
        [
            p
            for i in (1, 2, 3, 4)
            for p in (
                *([mem(f"t7-p1-{i}", "pg7-1", "50")] if i < 4 else []),
                mem(f"t7-p2-{i}", "pg7-2", "100"),
                mem(f"t7-p3-{i}", "pg7-3", "100"),
            )
        ],
        [pod_group("pg7-1", 3), pod_group("pg7-2", 4), pod_group("pg7-3", 4)],
        {"t7-p1-1", "t7-p1-2", "t7-p1-3"},
    ),
    "equal priority, not sequentially pg1 meet min and p2 p3 not meet min, "
    "pgs have min resources": case(
        [
            p
            for i in (1, 2, 3, 4)
            for p in (
                *([mem(f"t8-p1-{i}", "pg8-1", "50")] if i < 4 else []),
                mem(f"t8-p2-{i}", "pg8-2", "100"),
                mem(f"t8-p3-{i}", "pg8-3", "100"),
            )
        ],
        [
            pod_group("pg8-1", 3, "150"),
            pod_group("pg8-2", 4, "400"),
            pod_group("pg8-3", 4, "400"),
        ],
        {"t8-p1-1", "t8-p1-2", "t8-p1-3"},
    ),
    "equal priority, not sequentially pg1 meet min and pg2 not meet min, "
    "pgs have min resources": case(
        [
            p
            for i in (1, 2, 3, 4)
            for p in (
                *([mem(f"t9-p1-{i}", "pg9-1", "50")] if i < 4 else []),
                mem(f"t9-p2-{i}", "pg9-2", "100"),
            )
        ],
        [pod_group("pg9-1", 3, "150"), pod_group("pg9-2", 4, "400")],
        {"t9-p1-1", "t9-p1-2", "t9-p1-3"},
    ),
}


@pytest.mark.parametrize("tc", PLUGIN_CASES.values(), ids=PLUGIN_CASES.keys())
async def test_coscheduling_plugin(tc: Case) -> None:
    """TestCoschedulingPlugin: permitWaitingTimeSeconds 3."""
    profiles = upstream_profiles(permitWaitingTimeSeconds=3)
    bound = await bound_pods((FAKE_NODE, *tc.pod_groups, *tc.pods), profiles)
    assert bound == tc.expected


async def test_pod_completed_pg_cannot_be_scheduled_with_completed_pod() -> None:
    """TestPodCompleted, "pg cannot be scheduled with completed pod": a Succeeded member
    bound to fake-node-1 does not count towards minMember 6, so none of the 5 pending
    members is scheduled. Upstream never creates fake-node-1 (only builds it); here it
    exists, with room for all 5, so only Coscheduling can keep them pending."""
    members = [pod(f"t1-p1-{i}", "pg1-1", cpu="1") for i in range(2, 7)]
    completed = pod("t1-p1-1", "pg1-1", node_name="fake-node-1", phase="Succeeded", cpu="1")
    profiles = upstream_profiles(permitWaitingTimeSeconds=3, podGroupBackoffSeconds=1)
    docs = (node("fake-node-1", cpu="6"), pod_group("pg1-1", 6), completed, *members)
    assert await bound_pods(docs, profiles) == set()


async def test_podgroup_backoff_pg1_can_not_be_scheduled_and_pg2_can_be_scheduled() -> None:
    """TestPodgroupBackoff: pg1-1 (6 members of 4 CPU) fits nowhere whole (one 6-CPU and
    three 2-CPU nodes) and backs off; pg2-1's one 2-CPU pod is scheduled."""
    nodes = [node("fake-node-1", cpu="6")] + [node(f"fake-node-{i}", cpu="2") for i in (2, 3, 4)]
    pods = [pod(f"t1-p1-{i}", "pg1-1", cpu="4") for i in range(1, 7)]
    pods.append(pod("t1-p2-1", "pg2-1", cpu="2"))
    profiles = upstream_profiles(permitWaitingTimeSeconds=3, podGroupBackoffSeconds=1)
    docs = (*nodes, pod_group("pg1-1", 6), pod_group("pg2-1", 1), *pods)
    assert await bound_pods(docs, profiles) == {"t1-p2-1"}
