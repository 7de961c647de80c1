"""The cases of upstream's TestTopologySpreadConstraint
(removepodsviolatingtopologyspreadconstraint/topologyspreadconstraint_test.go) that
test_topologyspread.py runs: nodes, pods, how many are evicted, which, and extras (args,
nodeFit). test_topologyspread_upstream.py checks that, with its own, they make
upstream's 38."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contracts.k8s import (
    Node,
    Pod,
    Taint,
    TopologySpreadConstraint,
)
from services.descheduler.plugins.topologyspread import (
    RemovePodsViolatingTopologySpreadConstraintArgs as Args,
)
from tests.unit.descheduler.support import build_pod, with_
from tests.unit.descheduler.topologyspread_support import FOO, RS, spread, zone


@dataclass
class Group:
    """``testPodList``."""

    count: int
    node: str
    constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    owners: bool = True
    labels: dict[str, str] = field(default_factory=lambda: dict(FOO))


def create(*groups: Group) -> list[Pod]:
    """``createTestPods``: pod-0, pod-1, … in namespace ns1."""
    pods, n = [], 0
    for g in groups:
        for _ in range(g.count):
            base = build_pod(f"pod-{n}", 100, 0, g.node, owners=RS if g.owners else [])
            pods.append(
                with_(
                    base,
                    meta_namespace="ns1",
                    meta_labels=dict(g.labels),
                    spec_topology_spread_constraints=list(g.constraints),
                )
            )
            n += 1
    return pods


AB = [zone("n1", "zoneA"), zone("n2", "zoneB")]
ABC = [*AB, zone("n3", "zoneC")]
GPU = Taint(key="hardware", value="gpu", effect="NoSchedule")
CASES: dict[str, tuple[list[Node], list[Pod], int, list[str] | None, dict[str, Any]]] = {
    "2 domains, sizes [2,1], maxSkew=1, move 0 pods": (
        AB,
        create(Group(1, "n1", spread(1)), Group(1, "n1"), Group(1, "n2")),
        0,
        None,
        {},
    ),
    "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2]": (
        AB,
        create(Group(1, "n1", spread(1)), Group(2, "n1"), Group(1, "n2")),
        1,
        None,
        {},
    ),
    "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (soft constraints)": (
        AB,
        create(Group(1, "n1", spread(1, "ScheduleAnyway")), Group(2, "n1"), Group(1, "n2")),
        1,
        None,
        {"args": Args(constraints=["ScheduleAnyway"])},
    ),
    "2 domains, sizes [3,1], maxSkew=1, no pods eligible, move 0 pods": (
        AB,
        create(
            Group(1, "n1", spread(1), owners=False),
            Group(2, "n1", owners=False),
            Group(1, "n2", owners=False),
        ),
        0,
        None,
        {},
    ),
    "2 domains, sizes [5,2], maxSkew=1, move 1 pod to achieve [4,3]": (
        AB,
        create(Group(1, "n1", spread(1)), Group(4, "n1"), Group(2, "n2")),
        1,
        None,
        {},
    ),
    "2 domains, sizes [4,0], maxSkew=1, move 2 pods to achieve [2,2]": (
        AB,
        create(Group(1, "n1", spread(1)), Group(3, "n1")),
        2,
        None,
        {},
    ),
    "3 domains, sizes [0, 1, 100], maxSkew=1, move 66 pods to get [34, 33, 34]": (
        ABC,
        create(Group(1, "n2", spread(1)), Group(100, "n3")),
        66,
        None,
        {},
    ),
    "4 domains, sizes [0, 1, 3, 5], should move 3 to get [2, 2, 3, 2]": (
        [*ABC, zone("n4", "zoneD")],
        create(Group(1, "n2", spread(1)), Group(3, "n3"), Group(5, "n4")),
        3,
        None,
        {},
    ),
    "2 domains size [2 6], maxSkew=2, should move 1 to get [3 5]": (
        AB,
        create(Group(1, "n1", spread(2)), Group(1, "n1"), Group(6, "n2")),
        1,
        None,
        {},
    ),
    "2 domains size [2 6], maxSkew=2, can't move any because of node taints": (
        [zone("n1", "zoneA", taints=[GPU]), zone("n2", "zoneB")],
        create(Group(1, "n1", spread(2)), Group(1, "n1"), Group(6, "n2")),
        0,
        None,
        {"fit": True},
    ),
    "2 domains size [2 6], maxSkew=2, can't move any because node1 does not have enough CPU": (
        [zone("n1", "zoneA", cpu=200), zone("n2", "zoneB")],
        create(Group(1, "n1", spread(2)), Group(1, "n1"), Group(6, "n2")),
        0,
        None,
        {},
    ),
    "3 domains size [8 7 0], maxSkew=1, should move 5 to get [5 5 5]": (
        ABC,
        create(Group(8, "n1", spread(1)), Group(7, "n2", spread(1))),
        5,
        ["pod-5", "pod-6", "pod-7", "pod-8", "pod-9"],
        {},
    ),
    "3 domains size [5 5 5], maxSkew=1, should move 0 to retain [5 5 5]": (
        ABC,
        create(Group(5, "n1", spread(1)), Group(5, "n2", spread(1)), Group(5, "n3", spread(1))),
        0,
        None,
        {},
    ),
}
