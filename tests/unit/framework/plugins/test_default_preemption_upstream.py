"""Upstream's TestPostFilter and TestDryRunPreemption (default_preemption_test.go),
case by case with upstream's names, resources and expectations.

Where upstream registers only the plugins a case needs, these run the default
profile: its other plugins pass on these plain nodes. Cases that need upstream's fake
plugins or scheduler extenders (which ksched does not have) are left out. Dry runs
go through both of ksched's paths: the columnar one and node by node."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import pytest

from contracts.k8s import (
    Node,
    Pod,
    PodDisruptionBudget,
)
from services.framework.plugins.defaultpreemption.args import DefaultPreemptionArgs
from tests.builders import make_node, make_pod
from tests.builders.selectors import pod_affinity
from tests.unit.framework.plugins.interpodaffinity.support import exists, term
from tests.unit.framework.plugins.preemption_support import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NODE_RES,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    P,
    dry_run,
    framework_for,
    named,
    node,
    pdb,
    spread_preemptor,
)

# -- TestPostFilter -----------------------------------------------------------------


@dataclass
class PostFilterCase:
    pod: Pod
    pods: list[Pod]
    nodes: list[Node]
    nominated: str | None
    message: str = ""
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)


POST_FILTER = {
    "pod with higher priority can be made schedulable": PostFilterCase(
        P("p").prio(HIGH).obj(), [P("p1").on("node1").obj()], [node("node1", ONE_POD)], "node1"
    ),
    "pod with tied priority is still unschedulable": PostFilterCase(
        P("p").obj(),
        [P("p1").on("node1").obj()],
        [node("node1", ONE_POD)],
        None,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    "preemption should respect filteredNodesStatuses": PostFilterCase(
        P("p").prio(HIGH).obj(),
        [P("p1").on("node1").obj()],
        # Upstream marks node1 UnschedulableAndUnresolvable; an unschedulable node is.
        [make_node("node1", allocatable={"pods": 1}, unschedulable=True)],
        None,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    "pod can be made schedulable on one node": PostFilterCase(
        P("p").prio(MID).obj(),
        [P("p1").prio(HIGH).on("node1").obj(), P("p2").prio(LOW).on("node2").obj()],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        "node2",
    ),
    "pod can be made schedulable on minHighestPriority node": PostFilterCase(
        P("p").prio(VERY_HIGH).obj(),
        [
            P("p1").label("pdb", "non-violating").prio(HIGH).on("node1").obj(),
            P("p2").label("pdb", "violating").prio(LOW).on("node1").obj(),
            P("p3").label("pdb", "violating").prio(MID).on("node2").obj(),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        "node2",
        pdbs=[
            pdb(0, name="violating", pdb="violating"),
            pdb(2**31 - 1, name="non-violating", pdb="non-violating"),
        ],
    ),
    "no candidate nodes found, no enough resource after removing low priority pods": (
        PostFilterCase(
            P("p").prio(HIGH).req(LARGE).obj(),
            [P("p1").on("node1").obj(), P("p2").on("node2").obj()],
            [node("node1", NODE_RES), node("node2", NODE_RES)],
            None,
            "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
        )
    ),
    "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU "
    "resource": PostFilterCase(
        P("p").prio(HIGH).req(LARGE).obj(),
        [
            P("p1").on("node1").prio(HIGH).obj(),
            P("p2").on("node2").obj(),
            P("p3").on("node3").prio(HIGH).obj(),
        ],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
        None,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
    ),
    "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 "
    "nodes don't have enough CPU resource": PostFilterCase(
        P("p").prio(HIGH).req(LARGE).obj(),
        [P("p1").on("node1").obj(), P("p2").on("node2").obj()],
        [
            node("node1", NODE_RES),
            node("node2", NODE_RES),
            make_node("node3", allocatable={**NODE_RES, "pods": 32}, unschedulable=True),
            make_node("node4", allocatable={**NODE_RES, "pods": 32}, unschedulable=True),
        ],
        None,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
    ),
}


@pytest.mark.parametrize("case", POST_FILTER.values(), ids=POST_FILTER.keys())
def test_post_filter(case: PostFilterCase) -> None:
    framework, plugin, cache = framework_for(case.nodes, case.pods, case.pdbs)
    plugin.offset = lambda n: 0
    result = framework.schedule_pod(cache, case.pod)
    assert result.node is None
    chosen = result.post_filter
    assert (chosen.nominated_node_name or None if chosen else None) == case.nominated
    if case.message:
        assert result.message.endswith(case.message), result.message
        assert result.message.count("preemption:") == 1


# -- TestDryRunPreemption ----------------------------------------------------------


@dataclass
class DryRunCase:
    nodes: list[str]
    pods: list[Pod]
    preemptors: list[Pod]
    expected: list[list[tuple[str, list[str], int]]]
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    args: DefaultPreemptionArgs | None = None
    offsets: list[int] = field(default_factory=lambda: [0])


ANTI_FOO = make_pod(
    "p1.1",
    labels={"foo": ""},
    node_name="node1",
    affinity=pod_affinity(anti=[term("hostname", exists("foo"))]),
)


def _with(pod: Pod, base: Pod) -> Pod:
    """``base``'s affinity on ``pod``."""
    return msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, affinity=base.spec.affinity)
    )


LIMIT_2 = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1)
FIVE = ["node1", "node2", "node3", "node4", "node5"]
FOO_PODS = [
    P(f"p1.{i}").on("node1").label("app", "foo").prio(MID).req(MEDIUM).obj() for i in (1, 2)
]

DRY_RUN = {
    "a pod that fits on both nodes when lower priority pods are preempted": DryRunCase(
        ["node1", "node2"],
        [
            P("p1").on("node1").prio(MID).req(LARGE).obj(),
            P("p2").on("node2").prio(MID).req(LARGE).obj(),
        ],
        [P("p").prio(HIGH).req(LARGE).obj()],
        [[("node1", ["p1"], 0), ("node2", ["p2"], 0)]],
    ),
    "a pod that would fit on the nodes, but other pods running are higher priority, no "
    "preemption would happen": DryRunCase(
        ["node1", "node2"],
        [
            P("p1").on("node1").prio(MID).req(LARGE).obj(),
            P("p2").on("node2").prio(MID).req(LARGE).obj(),
        ],
        [P("p").prio(LOW).req(LARGE).obj()],
        [[]],
    ),
    "medium priority pod is preempted, but lower priority one stays as it is small": DryRunCase(
        ["node1", "node2"],
        [
            P("p1.1").on("node1").prio(LOW).req(SMALL).obj(),
            P("p1.2").on("node1").prio(MID).req(LARGE).obj(),
            P("p2").on("node2").prio(MID).req(LARGE).obj(),
        ],
        [P("p").prio(HIGH).req(LARGE).obj()],
        [[("node1", ["p1.2"], 0), ("node2", ["p2"], 0)]],
    ),
    "mixed priority pods are preempted": DryRunCase(
        ["node1", "node2"],
        [
            P("p1.1").on("node1").prio(MID).req(SMALL).obj(),
            P("p1.2").on("node1").prio(LOW).req(SMALL).obj(),
            P("p1.3").on("node1").prio(MID).req(MEDIUM).obj(),
            P("p1.4").on("node1").prio(HIGH).req(SMALL).obj(),
            P("p2").on("node2").prio(HIGH).req(LARGE).obj(),
        ],
        [P("p").prio(HIGH).req(LARGE).obj()],
        [[("node1", ["p1.2", "p1.3"], 0)]],
    ),
    "mixed priority pods are preempted, pick later StartTime one when priorities are equal": (
        DryRunCase(
            ["node1", "node2"],
            [
                P("p1.1").on("node1").prio(LOW).req(SMALL).started(5).obj(),
                P("p1.2").on("node1").prio(LOW).req(SMALL).started(4).obj(),
                P("p1.3").on("node1").prio(MID).req(MEDIUM).started(3).obj(),
                P("p1.4").on("node1").prio(HIGH).req(SMALL).started(2).obj(),
                P("p2").on("node2").prio(HIGH).req(LARGE).started(1).obj(),
            ],
            [P("p").prio(HIGH).req(LARGE).obj()],
            [[("node1", ["p1.1", "p1.3"], 0)]],
        )
    ),
    "pod with anti-affinity is preempted": DryRunCase(
        ["node1", "node2"],
        [
            _with(P("p1.1").on("node1").label("foo", "").prio(LOW).req(SMALL).obj(), ANTI_FOO),
            P("p1.2").on("node1").prio(MID).req(SMALL).obj(),
            P("p1.3").on("node1").prio(HIGH).req(SMALL).obj(),
            P("p2").on("node2").prio(HIGH).req(SMALL).obj(),
        ],
        [P("p").label("foo", "").prio(HIGH).req(SMALL).obj()],
        [[("node1", ["p1.1"], 0)]],
    ),
    "preemption to resolve pod topology spread filter failure": DryRunCase(
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [
            P("pod-a1").on("node-a").label("foo", "").prio(MID).obj(),
            P("pod-a2").on("node-a").label("foo", "").prio(LOW).obj(),
            P("pod-b1").on("node-b").label("foo", "").prio(LOW).obj(),
            P("pod-x1").on("node-x").label("foo", "").prio(HIGH).obj(),
            P("pod-x2").on("node-x").label("foo", "").prio(HIGH).obj(),
        ],
        [spread_preemptor()],
        [[("node-a", ["pod-a2"], 0), ("node-b", ["pod-b1"], 0)]],
    ),
    "preemption with violation of same pdb": DryRunCase(
        ["node1"],
        FOO_PODS,
        [P("p").prio(HIGH).req(VERY_LARGE).obj()],
        [[("node1", ["p1.1", "p1.2"], 1)]],
        pdbs=[pdb(1, app="foo")],
    ),
    "preemption with violation of the pdb with pod whose eviction was processed, the victim "
    "doesn't belong to DisruptedPods": DryRunCase(
        ["node1"],
        FOO_PODS,
        [P("p").prio(HIGH).req(VERY_LARGE).obj()],
        [[("node1", ["p1.1", "p1.2"], 1)]],
        pdbs=[pdb(1, ["p2"], app="foo")],
    ),
    "preemption with violation of the pdb with pod whose eviction was processed, the victim "
    "belongs to DisruptedPods": DryRunCase(
        ["node1"],
        FOO_PODS,
        [P("p").prio(HIGH).req(VERY_LARGE).obj()],
        [[("node1", ["p1.1", "p1.2"], 0)]],
        pdbs=[pdb(1, ["p1.2"], app="foo")],
    ),
    "preemption with violation of the pdb with pod whose eviction was processed, the victim "
    "which belongs to DisruptedPods is treated as 'nonViolating'": DryRunCase(
        ["node1"],
        [*FOO_PODS, P("p1.3").on("node1").label("app", "foo").prio(MID).req(MEDIUM).obj()],
        [P("p").prio(HIGH).req(VERY_LARGE).obj()],
        [[("node1", ["p1.1", "p1.2", "p1.3"], 1)]],
        pdbs=[pdb(1, ["p1.3"], app="foo")],
    ),
    "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2": DryRunCase(
        FIVE,
        [P(f"p{i}").on(f"node{i}").prio(MID).req(LARGE).obj() for i in range(1, 6)],
        [P("p").prio(HIGH).req(LARGE).obj()],
        # offset 4 => node5 (yes), node1 (yes)
        [[("node1", ["p1"], 0), ("node5", ["p5"], 0)]],
        args=LIMIT_2,
        offsets=[4],
    ),
    "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2": DryRunCase(
        FIVE,
        [
            P(f"p{i}").on(f"node{i}").prio(VERY_HIGH if i in (2, 5) else MID).req(LARGE).obj()
            for i in range(1, 6)
        ],
        [P("p").prio(HIGH).req(LARGE).obj()],
        # offset 4 => node5 (no), node1 (yes), node2 (no), node3 (yes)
        [[("node1", ["p1"], 0), ("node3", ["p3"], 0)]],
        args=LIMIT_2,
        offsets=[4],
    ),
    "preemption offset across multiple scheduling cycles and wrap around": DryRunCase(
        FIVE,
        [P(f"p{i}").on(f"node{i}").prio(MID).req(LARGE).obj() for i in range(1, 6)],
        [P(f"tp{i}").prio(HIGH).req(LARGE).obj() for i in (1, 2, 3)],
        [
            [("node1", ["p1"], 0), ("node5", ["p5"], 0)],
            [("node2", ["p2"], 0), ("node3", ["p3"], 0)],
            [("node4", ["p4"], 0), ("node5", ["p5"], 0)],
        ],
        args=LIMIT_2,
        offsets=[4, 1, 3],
    ),
    "preemption looks past numCandidates until a non-PDB violating node is found": DryRunCase(
        FIVE,
        [
            P("p1").on("node1").label("app", "foo").prio(MID).req(LARGE).obj(),
            P("p2").on("node2").label("app", "foo").prio(MID).req(LARGE).obj(),
            P("p3").on("node3").prio(MID).req(LARGE).obj(),
            P("p4").on("node4").prio(MID).req(LARGE).obj(),
            P("p5").on("node5").label("app", "foo").prio(MID).req(LARGE).obj(),
        ],
        [P("p").prio(HIGH).req(LARGE).obj()],
        # offset 4 => node5 (pdb), node1 (pdb), node2 (pdb), node3 (yes): three, not two
        [[("node1", ["p1"], 1), ("node3", ["p3"], 0), ("node5", ["p5"], 1)]],
        pdbs=[pdb(0, app="foo")],
        args=DefaultPreemptionArgs(
            min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=2
        ),
        offsets=[4],
    ),
}


@pytest.mark.parametrize("node_by_node", [False, True], ids=["columnar", "node by node"])
@pytest.mark.parametrize("case", DRY_RUN.values(), ids=DRY_RUN.keys())
def test_dry_run_preemption(case: DryRunCase, node_by_node: bool) -> None:
    cycles = dry_run(
        [node(name) for name in case.nodes],
        case.pods,
        case.preemptors[0],
        pdbs=case.pdbs,
        args=case.args,
        offsets=case.offsets,
        node_by_node=node_by_node,
        preemptors=case.preemptors,
    )
    assert [named(c) for c in cycles] == case.expected
