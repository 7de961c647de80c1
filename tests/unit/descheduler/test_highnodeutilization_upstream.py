"""Upstream's highnodeutilization_test.go, case by case with upstream's names and
expectations: TestHighNodeUtilization and TestHighNodeUtilizationWithTaints, every case.

As upstream's handles do, the evictor is DefaultEvictor with ``NodeFit: true`` except
in TestHighNodeUtilizationWithTaints (``DefaultEvictorArgs{}``). Where upstream lists
``evictedPods``, its fake client fails any other eviction: the pods evicted are exactly
those. The builders are in nodeutilization_upstream_support.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from contracts.k8s import (
    Node,
    Pod,
    Toleration,
)
from services.descheduler.evictions import Limits
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.nodeutilization import (
    HighNodeUtilizationArgs,
    new_high,
)
from tests.unit.descheduler.nodeutilization_upstream_support import (
    EXT,
    HIGH_PRIORITY,
    KEY_TAINT,
    LOW_PRIORITY,
    best_effort,
    critical,
    ds,
    extended,
    local_mirror,
    rs,
)
from tests.unit.descheduler.support import (
    build_node,
    evicted_names,
    run_plugin,
)


@dataclass
class HighCase:
    thresholds: dict[str, float]
    nodes: list[Node]
    pods: list[Pod]
    evicted: int
    names: list[str] = field(default_factory=list)
    eviction_modes: list[str] = field(default_factory=list)


def unschedulable_n3(millicpu: int = 4000) -> list[Node]:
    return [
        build_node("n1", millicpu, 3000, 10),
        build_node("n2", millicpu, 3000, 10),
        build_node("n3", millicpu, 3000, 10, unschedulable=True),
    ]


NOT_ENOUGH_MEMORY = HighCase(
    {"cpu": 30, "pods": 30},
    [build_node("n1", 4000, 200, 9), build_node("n2", 4000, 3000, 10)],
    [
        rs("p1", "n1", 400, 50),
        rs("p2", "n1", 400, 50),
        rs("p3", "n1", 400, 50),
        ds("p4", "n1", 400, 50),
        rs("p5", "n2", 400, 100),
    ],
    0,
)
HIGH: list[tuple[str, HighCase]] = [
    (
        "no node below threshold usage",
        HighCase(
            {"cpu": 20, "pods": 20},
            [
                build_node("n1", 4000, 3000, 10),
                build_node("n2", 4000, 3000, 10),
                build_node("n3", 4000, 3000, 10),
            ],
            [rs(f"p{i}", f"n{(i - 1) // 3 + 1}") for i in range(1, 10)],
            0,
        ),
    ),
    (
        "no evictable pods",
        HighCase(
            {"cpu": 40, "pods": 40},
            [
                build_node("n1", 4000, 3000, 9),
                build_node("n2", 4000, 3000, 10),
                build_node("n3", 4000, 3000, 10),
            ],
            [
                local_mirror("p1", "n1"),
                critical("p2", "n1"),
                ds("p3", "n2"),
                ds("p4", "n2"),
                *(rs(f"p{i}", "n3") for i in range(5, 9)),
            ],
            0,
        ),
    ),
    (
        "no node to schedule evicted pods",
        HighCase(
            {"cpu": 20, "pods": 20},
            unschedulable_n3(),
            [rs("p1", "n1"), rs("p2", "n2"), rs("p3", "n3"), rs("p4", "n3"), rs("p5", "n3")],
            0,
        ),
    ),
    (
        "without priorities",
        HighCase(
            {"cpu": 30, "pods": 30},
            unschedulable_n3(),
            [
                rs("p1", "n1"),
                critical("p2", "n1"),
                *(rs(f"p{i}", "n2") for i in range(3, 7)),
                rs("p7", "n3"),
            ],
            2,
            ["p1", "p7"],
        ),
    ),
    (
        "without priorities stop when resource capacity is depleted",
        HighCase(
            {"cpu": 30, "pods": 30},
            unschedulable_n3(2000),
            [rs("p1", "n1"), *(rs(f"p{i}", "n2") for i in range(2, 6)), rs("p6", "n3")],
            1,
        ),
    ),
    (
        "with priorities",
        HighCase(
            {"cpu": 30},
            [
                build_node("n1", 4000, 3000, 10),
                build_node("n2", 2000, 3000, 10),
                build_node("n3", 2000, 3000, 10, unschedulable=True),
            ],
            [
                rs("p1", "n1", spec_priority=LOW_PRIORITY),
                rs("p2", "n1", spec_priority=HIGH_PRIORITY),
                *(rs(f"p{i}", "n2") for i in range(5, 9)),
                ds("p9", "n3"),
            ],
            1,
            ["p1"],
        ),
    ),
    (
        "without priorities evicting best-effort pods only",
        HighCase(
            {"cpu": 30},
            [
                build_node("n1", 3000, 3000, 10),
                build_node("n2", 3000, 3000, 5),
                build_node("n3", 3000, 3000, 10, unschedulable=True),
            ],
            [
                best_effort(rs("p1", "n1", 0, 0)),
                rs("p2", "n1"),
                *(rs(f"p{i}", "n2") for i in range(3, 7)),
            ],
            1,
            ["p1"],
        ),
    ),
    (
        "with extended resource",
        HighCase(
            {"cpu": 20, EXT: 40},
            [
                build_node("n1", 4000, 3000, 10, extended={EXT: 8}),
                build_node("n2", 4000, 3000, 10, extended={EXT: 8}),
                build_node("n3", 4000, 3000, 10, unschedulable=True),
            ],
            [
                extended(rs("p1", "n1", 100), 1),
                extended(rs("p2", "n1", 100), 1),
                *(extended(rs(f"p{i}", "n2", 500), 1) for i in range(3, 7)),
            ],
            2,
            ["p1", "p2"],
        ),
    ),
    (
        "with extended resource in some of nodes",
        HighCase(
            {"cpu": 40, EXT: 40},
            [
                build_node("n1", 4000, 3000, 10, extended={EXT: 8}),
                build_node("n2", 4000, 3000, 10),
                build_node("n3", 4000, 3000, 10, unschedulable=True),
            ],
            [
                extended(rs("p1", "n1", 100), 1),
                extended(rs("p2", "n1", 100), 1),
                *(rs(f"p{i}", "n2", 500) for i in range(3, 7)),
            ],
            0,
        ),
    ),
    (
        "Other node match pod node selector",
        HighCase(
            {"cpu": 30, "pods": 30},
            [
                build_node("n1", 4000, 3000, 9, labels={"datacenter": "west"}),
                build_node("n2", 4000, 3000, 10),
            ],
            [
                rs("p1", "n1"),
                rs("p2", "n1"),
                rs("p3", "n1"),
                ds("p4", "n1"),
                rs("p5", "n2", spec_node_selector={"datacenter": "west"}),
            ],
            1,
        ),
    ),
    (
        "Other node does not match pod node selector",
        HighCase(
            {"cpu": 30, "pods": 30},
            [build_node("n1", 4000, 3000, 9), build_node("n2", 4000, 3000, 10)],
            [
                rs("p1", "n1"),
                rs("p2", "n1"),
                rs("p3", "n1"),
                ds("p4", "n1"),
                rs("p5", "n2", spec_node_selector={"datacenter": "west"}),
            ],
            0,
        ),
    ),
    # Upstream's table has this case twice, identical.
    ("Other node does not have enough Memory", NOT_ENOUGH_MEMORY),
    ("Other node does not have enough Memory (2)", NOT_ENOUGH_MEMORY),
    (
        "with extended resource threshold and no extended resource pods",
        HighCase(
            {EXT: 40},
            [
                build_node("n1", 4000, 3000, 10, extended={EXT: 10}),
                build_node("n2", 4000, 3000, 10, extended={EXT: 10}),
                build_node("n3", 4000, 3000, 10, extended={EXT: 10}),
            ],
            [
                extended(rs("p1", "n1", 100), 3),
                extended(rs("p2", "n1", 100), 3),
                *(rs(f"p{i}", "n2", 500) for i in range(3, 7)),
            ],
            0,
            eviction_modes=["OnlyThresholdingResources"],
        ),
    ),
]


@pytest.mark.parametrize("case", [c for _, c in HIGH], ids=[n for n, _ in HIGH])
def test_high_node_utilization(case: HighCase) -> None:
    args = HighNodeUtilizationArgs(thresholds=case.thresholds, eviction_modes=case.eviction_modes)
    evictor = run_plugin(
        new_high,
        args,
        case.nodes,
        case.pods,
        evictor_args=DefaultEvictorArgs(node_fit=True),
        balance=True,
    )
    assert evictor.total_evicted == case.evicted
    if case.names:
        assert sorted(evicted_names(evictor)) == sorted(case.names)


# TestHighNodeUtilizationWithTaints: thresholds cpu 40, DefaultEvictorArgs{} (no
# NodeFit), a per-node limit of the number expected.

H1 = build_node("n1", 1000, 3000, 10)
H2 = build_node("n2", 1000, 3000, 10)
H3 = build_node("n3", 1000, 3000, 10)
H3_TAINTED = build_node("n3", 1000, 3000, 10, taints=[KEY_TAINT])
H_TOLERATES = rs("tolerate_pod", "n1", 200, spec_tolerations=[Toleration(key="key", value="value")])
HIGH_TAINTS: dict[str, tuple[list[Node], list[Pod], int]] = {
    "No taints": (
        [H1, H2, H3],
        [*(rs(f"pod_{i}_n1", "n1", 200) for i in range(1, 4)), rs("pod_4_n2", "n2", 200)],
        1,
    ),
    "No pod tolerates node taint": (
        [H1, H3_TAINTED],
        [rs("pod_1_n1", "n1", 200), rs("pod_2_n3", "n3", 200)],
        0,
    ),
    "Pod which tolerates node taint": (
        [H1, H3_TAINTED],
        [rs("pod_1_n1", "n1", 100), H_TOLERATES, rs("pod_9_n3", "n3", 500)],
        1,
    ),
}


@pytest.mark.parametrize(
    ("nodes", "pods", "expected"), HIGH_TAINTS.values(), ids=HIGH_TAINTS.keys()
)
def test_high_node_utilization_with_taints(
    nodes: Sequence[Node], pods: list[Pod], expected: int
) -> None:
    evictor = run_plugin(
        new_high,
        HighNodeUtilizationArgs(thresholds={"cpu": 40}),
        nodes,
        pods,
        evictor_args=DefaultEvictorArgs(),
        limits=Limits(per_node=expected),
        balance=True,
    )
    assert evictor.total_evicted == expected
