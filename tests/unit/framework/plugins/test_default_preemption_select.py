"""Upstream's TestSelectBestCandidate, TestPodEligibleToPreemptOthers and TestPreempt
(default_preemption_test.go), case by case with upstream's names and expectations;
see test_default_preemption_upstream.py for how they are run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contracts.k8s import (
    Pod,
)
from services.framework.api.diagnosis import Diagnosis
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.defaultpreemption.plugin import (
    pick_one_node,
)
from tests.unit.framework.plugins.preemption_support import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    NOW,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    P,
    dry_run,
    framework_for,
    node,
    spread_preemptor,
)

# -- TestSelectBestCandidate --------------------------------------------------------


def _pods(
    *specs: tuple[str, int, dict[str, str]] | tuple[str, int, dict[str, str], int],
) -> list[Pod]:
    """``("p1.1", MID, SMALL)`` on node1 (the digit after "p"), started at the epoch or
    at the given second."""
    pods = []
    for spec in specs:
        name, priority, requests = spec[:3]
        second = spec[3] if len(spec) > 3 else 0
        on = f"node{name[1]}"
        pods.append(P(name).on(on).prio(priority).req(requests).started(second).obj())
    return pods


SELECT_BEST = {
    "a pod that fits on both nodes when lower priority pods are preempted": (
        2,
        P("p").prio(HIGH).req(LARGE).obj(),
        _pods(("p1", MID, LARGE), ("p2", MID, LARGE)),
        {"node1", "node2"},
    ),
    "node with min highest priority pod is picked": (
        3,
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        _pods(
            ("p1.1", MID, MEDIUM),
            ("p1.2", MID, LARGE),
            ("p2.1", MID, MEDIUM),
            ("p2.2", LOW, MEDIUM),
            ("p3.1", LOW, MEDIUM),
            ("p3.2", LOW, MEDIUM),
        ),
        {"node3"},
    ),
    "when highest priorities are the same, minimum sum of priorities is picked": (
        3,
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        _pods(
            ("p1.1", MID, MEDIUM),
            ("p1.2", MID, LARGE),
            ("p2.1", MID, LARGE),
            ("p2.2", LOW, MEDIUM),
            ("p3.1", MID, MEDIUM),
            ("p3.2", MID, MEDIUM),
        ),
        {"node2"},
    ),
    "when highest priority and sum are the same, minimum number of pods is picked": (
        3,
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        _pods(
            ("p1.1", MID, SMALL),
            ("p1.2", NEG, SMALL),
            ("p1.3", MID, SMALL),
            ("p1.4", NEG, SMALL),
            ("p2.1", MID, LARGE),
            ("p2.2", NEG, MEDIUM),
            ("p3.1", MID, MEDIUM),
            ("p3.2", NEG, SMALL),
            ("p3.3", LOW, SMALL),
        ),
        {"node2"},
    ),
    "sum of adjusted priorities is considered": (
        3,
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        _pods(
            ("p1.1", MID, SMALL),
            ("p1.2", NEG, SMALL),
            ("p1.3", NEG, SMALL),
            ("p2.1", MID, LARGE),
            ("p2.2", NEG, MEDIUM),
            ("p3.1", MID, MEDIUM),
            ("p3.2", NEG, SMALL),
            ("p3.3", LOW, SMALL),
        ),
        {"node2"},
    ),
    "non-overlapping lowest high priority, sum priorities, and number of pods": (
        4,
        P("p").prio(VERY_HIGH).req(VERY_LARGE).obj(),
        _pods(
            ("p1.1", MID, SMALL),
            ("p1.2", LOW, SMALL),
            ("p1.3", LOW, SMALL),
            ("p2.1", HIGH, LARGE),
            ("p3.1", MID, MEDIUM),
            ("p3.2", LOW, SMALL),
            ("p3.3", LOW, SMALL),
            ("p3.4", LOW, MEDIUM),
            ("p4.1", MID, MEDIUM),
            ("p4.2", MID, SMALL),
            ("p4.3", MID, SMALL),
            ("p4.4", NEG, SMALL),
        ),
        {"node1"},
    ),
    "same priority, same number of victims, different start time for each node's pod": (
        3,
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        _pods(
            ("p1.1", MID, MEDIUM, 2),
            ("p1.2", MID, MEDIUM, 2),
            ("p2.1", MID, MEDIUM, 3),
            ("p2.2", MID, MEDIUM, 3),
            ("p3.1", MID, MEDIUM, 1),
            ("p3.2", MID, MEDIUM, 1),
        ),
        {"node2"},
    ),
    "same priority, same number of victims, different start time for all pods": (
        3,
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        _pods(
            ("p1.1", MID, MEDIUM, 4),
            ("p1.2", MID, MEDIUM, 2),
            ("p2.1", MID, MEDIUM, 5),
            ("p2.2", MID, MEDIUM, 1),
            ("p3.1", MID, MEDIUM, 3),
            ("p3.2", MID, MEDIUM, 6),
        ),
        {"node3"},
    ),
    "different priority, same number of victims, different start time for all pods": (
        3,
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        _pods(
            ("p1.1", LOW, MEDIUM, 4),
            ("p1.2", MID, MEDIUM, 2),
            ("p2.1", MID, MEDIUM, 6),
            ("p2.2", LOW, MEDIUM, 1),
            ("p3.1", LOW, MEDIUM, 3),
            ("p3.2", MID, MEDIUM, 5),
        ),
        {"node2"},
    ),
}


@pytest.mark.parametrize("node_by_node", [False, True], ids=["columnar", "node by node"])
@pytest.mark.parametrize(
    ("num_nodes", "incoming", "pods", "expected"), SELECT_BEST.values(), ids=SELECT_BEST.keys()
)
def test_select_best_candidate(
    num_nodes: int, incoming: Pod, pods: list[Pod], expected: set[str], node_by_node: bool
) -> None:
    nodes = [node(f"node{i}") for i in range(1, num_nodes + 1)]
    (candidates,) = dry_run(nodes, pods, incoming, node_by_node=node_by_node)
    best = pick_one_node(candidates, NOW)
    assert best is not None and best.node in expected


# -- TestPodEligibleToPreemptOthers -------------------------------------------------


ELIGIBLE = {
    "Pod with nominated node": (
        P("p").prio(HIGH).nominate("node1"),
        [P("p1").prio(LOW).on("node1").going()],
        Status(Code.UnschedulableAndUnresolvable, ("node(s) had untolerated taint",)),
        True,
    ),
    "Pod without nominated node": (P("p").prio(HIGH), [], None, True),
    "Pod with 'PreemptNever' preemption policy": (
        replace(P("p").prio(HIGH), never=True),
        [],
        None,
        False,
    ),
    "preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition": (
        P("p").prio(HIGH).nominate("node1"),
        [P("p1").prio(LOW).on("node1").going(by_preemption=True)],
        None,
        False,
    ),
    "non-victim Pods terminating": (
        P("p").prio(HIGH).nominate("node1"),
        [P("p1").prio(LOW).on("node1").going()],
        None,
        True,
    ),
}


@pytest.mark.parametrize(
    ("incoming", "pods", "nominated_status", "expected"), ELIGIBLE.values(), ids=ELIGIBLE.keys()
)
def test_pod_eligible_to_preempt_others(
    incoming: P, pods: list[P], nominated_status: Status | None, expected: bool
) -> None:
    nodes = [node("node1")] if pods or incoming.nominated else []
    _, plugin, cache = framework_for(nodes, [p.obj() for p in pods])
    view = cache.snapshot()
    diagnosis = Diagnosis(num_nodes=view.num_nodes, node_status=lambda _row: nominated_status)
    eligible, _ = plugin.eligible(PodInfo.of(incoming.obj()), view, diagnosis)
    assert eligible is expected


# -- TestPreempt ---------------------------------------------------------------------


PREEMPT = {
    "basic preemption logic": (
        ["node1", "node2", "node3"],
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        [
            P("p1.1").on("node1").prio(LOW).req(SMALL).obj(),
            P("p1.2").on("node1").prio(LOW).req(SMALL).obj(),
            P("p2.1").on("node2").prio(HIGH).req(LARGE).obj(),
            P("p3.1").on("node3").prio(MID).req(MEDIUM).obj(),
        ],
        "node1",
        ["p1.1", "p1.2"],
    ),
    "preemption for topology spread constraints": (
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        spread_preemptor(),
        [
            P("p-a1").on("node-a").label("foo", "").prio(HIGH).obj(),
            P("p-a2").on("node-a").label("foo", "").prio(HIGH).obj(),
            P("p-b1").on("node-b").label("foo", "").prio(LOW).obj(),
            P("p-x1").on("node-x").label("foo", "").prio(HIGH).obj(),
            P("p-x2").on("node-x").label("foo", "").prio(HIGH).obj(),
        ],
        "node-b",
        ["p-b1"],
    ),
    "no preempting in pod": (
        ["node1", "node2", "node3"],
        replace(P("p").prio(HIGH).req(VERY_LARGE), never=True).obj(),
        [
            P("p1.1").on("node1").prio(LOW).req(SMALL).obj(),
            P("p1.2").on("node1").prio(LOW).req(SMALL).obj(),
            P("p2.1").on("node2").prio(HIGH).req(LARGE).obj(),
            P("p3.1").on("node3").prio(MID).req(MEDIUM).obj(),
        ],
        None,
        [],
    ),
    "PreemptionPolicy is nil": (
        ["node1", "node2", "node3"],
        P("p").prio(HIGH).req(VERY_LARGE).obj(),
        [
            P("p1.1").on("node1").prio(LOW).req(SMALL).obj(),
            P("p1.2").on("node1").prio(LOW).req(SMALL).obj(),
            P("p2.1").on("node2").prio(HIGH).req(LARGE).obj(),
            P("p3.1").on("node3").prio(MID).req(MEDIUM).obj(),
        ],
        "node1",
        ["p1.1", "p1.2"],
    ),
}


@pytest.mark.parametrize(
    ("nodes", "incoming", "pods", "nominated", "victims"), PREEMPT.values(), ids=PREEMPT.keys()
)
def test_preempt(
    nodes: list[str], incoming: Pod, pods: list[Pod], nominated: str | None, victims: list[str]
) -> None:
    framework, plugin, cache = framework_for([node(name) for name in nodes], pods)
    plugin.offset = lambda n: 0
    result = framework.schedule_pod(cache, incoming)
    assert result.node is None
    chosen = result.post_filter
    got = (
        (chosen.nominated_node_name or None, sorted(v.pod.metadata.name for v in chosen.victims))
        if chosen
        else (None, [])
    )
    assert got == (nominated, victims)
