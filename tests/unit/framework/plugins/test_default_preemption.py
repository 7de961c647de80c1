"""DefaultPreemption: upstream's tables (default_preemption_test.go, preemption_test.go)
through the default profile's whole cycle — eligibility, where preemption might help,
the victims chosen on a node (reprieve, PDBs), the node picked among candidates, and the
FailedScheduling text a current cluster prints."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from contracts.k8s import (
    LabelSelector,
    ObjectMeta,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.defaultpreemption.args import DefaultPreemptionArgs
from services.framework.plugins.defaultpreemption.plugin import (
    NO_VICTIMS,
    Candidate,
    DefaultPreemption,
    pick_one_node,
    split_by_pdb_violation,
)
from services.framework.runtime.filtering import NominatedPods
from services.framework.runtime.framework import Framework
from services.framework.runtime.result import ScheduleResult
from tests.builders import make_node, make_pod
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.preemption_support import both_dry_runs

NOW = 1_700_000_000.0
LOW, MID, HIGH = 0, 100, 1000
SMALL = {"cpu": "1", "memory": "1Gi"}
"""A quarter of a node's cpu."""
NODE = {"cpu": "4", "memory": "8Gi", "pods": 110}


def started(pod: Pod, seconds_ago: float) -> Pod:
    """``pod`` with ``status.startTime`` ``seconds_ago`` before NOW."""
    stamp = datetime.fromtimestamp(NOW - seconds_ago, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return msgspec.structs.replace(
        pod, status=msgspec.structs.replace(pod.status, start_time=stamp)
    )


def victim(
    name: str, node: str, priority: int, *, cpu: str = "1", age: float = 100, **kw: Any
) -> Pod:
    pod = make_pod(
        name, node_name=node, priority=priority, requests={"cpu": cpu, "memory": "1Gi"}, **kw
    )
    return started(pod, age)


def preemptor(cpu: str = "2", priority: int = HIGH, **kw: Any) -> Pod:
    return make_pod("p", priority=priority, requests={"cpu": cpu, "memory": "1Gi"}, **kw)


def pdb(name: str, disruptions_allowed: int, **match: str) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodDisruptionBudgetSpec(selector=LabelSelector(match_labels=dict(match))),
        status=PodDisruptionBudgetStatus(disruptions_allowed=disruptions_allowed),
    )


@dataclass
class Cluster:
    nodes: Sequence[str] = ("n1",)
    pods: Sequence[Pod] = ()
    pdbs: Sequence[PodDisruptionBudget] = ()
    nominated: Sequence[Pod] = ()
    node_cpu: dict[str, str] = field(default_factory=dict)
    args: DefaultPreemptionArgs | None = None
    offset: int = 0

    def run(self, pod: Pod) -> ScheduleResult:
        snapshot = snapshot_of(
            [
                make_node(n, allocatable={**NODE, "cpu": self.node_cpu.get(n, NODE["cpu"])})
                for n in self.nodes
            ],
            self.pods,
        )
        for budget in self.pdbs:
            snapshot.listers.put(budget)
        framework = Framework(
            default_profile(),
            in_tree_registry(),
            rng=random.Random(0),
            listers=snapshot.listers,
            now=lambda: NOW,
        )
        plugin = framework.plugins["DefaultPreemption"]
        assert isinstance(plugin, DefaultPreemption)
        plugin.offset = lambda n: self.offset % n
        if self.args is not None:
            args = self.args.defaulted()
            plugin.percentage = args.min_candidate_nodes_percentage or 0
            plugin.absolute = args.min_candidate_nodes_absolute or 0
        by_node: dict[str, list[PodInfo]] = {}
        for other in self.nominated:
            by_node.setdefault(other.status.nominated_node_name or "", []).append(PodInfo.of(other))
        return framework.schedule_pod(snapshot, pod, nominated=NominatedPods.of(by_node))


def victims_of(result: ScheduleResult) -> tuple[str | None, list[str]]:
    chosen = result.post_filter
    assert chosen is not None
    return chosen.nominated_node_name, [v.pod.metadata.name for v in chosen.victims]


@pytest.mark.parametrize(
    ("cluster", "pod", "node", "victims"),
    [
        pytest.param(
            Cluster(pods=[victim("low", "n1", LOW, cpu="4")]),
            preemptor(),
            "n1",
            ["low"],
            id="a higher-priority pod preempts the one that is in its way",
        ),
        pytest.param(
            Cluster(pods=[victim("a", "n1", LOW, cpu="2"), victim("b", "n1", MID, cpu="2")]),
            preemptor(),
            "n1",
            ["a"],
            id="the more important lower-priority pod is reprieved",
        ),
        pytest.param(
            Cluster(
                pods=[
                    victim("a", "n1", LOW, cpu="1", age=300),
                    victim("b", "n1", LOW, cpu="1", age=200),
                    victim("c", "n1", LOW, cpu="2", age=100),
                ]
            ),
            preemptor(cpu="3"),
            "n1",
            ["b", "c"],
            id="reprieve from the most important (earliest started) first",
        ),
        pytest.param(
            Cluster(
                nodes=("n1", "n2"),
                pods=[victim("mid", "n1", MID, cpu="4"), victim("low", "n2", LOW, cpu="4")],
            ),
            preemptor(),
            "n2",
            ["low"],
            id="the node whose highest victim priority is lowest",
        ),
        pytest.param(
            Cluster(
                nodes=("n1", "n2"),
                pods=[
                    victim("a1", "n1", LOW, cpu="2"),
                    victim("a2", "n1", LOW, cpu="2"),
                    victim("b1", "n2", LOW, cpu="4"),
                ],
            ),
            preemptor(cpu="4"),
            "n2",
            ["b1"],
            id="equal priorities: the fewest victims (after the sum of priorities ties)",
        ),
        pytest.param(
            Cluster(
                nodes=("n1", "n2"),
                pods=[
                    victim("old", "n1", LOW, cpu="4", age=1000),
                    victim("new", "n2", LOW, cpu="4", age=10),
                ],
            ),
            preemptor(),
            "n2",
            ["new"],
            id="then the latest start among the highest-priority victims",
        ),
        pytest.param(
            Cluster(
                nodes=("n1", "n2"),
                pods=[
                    victim("guarded", "n1", LOW, cpu="4", labels={"app": "db"}),
                    victim("free", "n2", MID, cpu="4"),
                ],
                pdbs=[pdb("db", 0, app="db")],
            ),
            preemptor(),
            "n2",
            ["free"],
            id="a PDB that allows no disruption steers preemption elsewhere",
        ),
        pytest.param(
            Cluster(
                nodes=("n1",),
                pods=[victim("guarded", "n1", LOW, cpu="4", labels={"app": "db"})],
                pdbs=[pdb("db", 0, app="db")],
            ),
            preemptor(),
            "n1",
            ["guarded"],
            id="a PDB violation is still allowed when it is the only way",
        ),
    ],
)
def test_the_victims_and_the_node(
    cluster: Cluster, pod: Pod, node: str, victims: list[str]
) -> None:
    result = cluster.run(pod)
    assert result.node is None
    assert victims_of(result) == (node, victims)
    # A successful preemption adds nothing to the FailedScheduling text.
    assert "preemption:" not in result.message


@pytest.mark.parametrize(
    ("cluster", "pod", "message"),
    [
        pytest.param(
            Cluster(
                nodes=("n1", "n2", "n3"),
                pods=[victim(f"x{i}", f"n{i}", HIGH, cpu="4") for i in (1, 2, 3)],
            ),
            preemptor(),
            "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate,"
            " preemption: 0/3 nodes are available: "
            "3 No preemption victims found for incoming pod.",
            id="no lower-priority pods anywhere",
        ),
        pytest.param(
            Cluster(nodes=("n1", "n2")),
            preemptor(node_selector={"disk": "ssd"}),
            "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
            "no new claims to deallocate,"
            " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
            id="unresolvable everywhere: preemption cannot help",
        ),
        pytest.param(
            Cluster(pods=[victim("low", "n1", LOW, cpu="4")]),
            preemptor(cpu="8"),
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate,"
            " preemption: 0/1 nodes are available: "
            "1 Insufficient cpu.",
            id="even without every victim the pod does not fit",
        ),
        pytest.param(
            Cluster(pods=[victim("low", "n1", LOW, cpu="4")]),
            msgspec.structs.replace(
                preemptor(),
                spec=msgspec.structs.replace(preemptor().spec, preemption_policy="Never"),
            ),
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate,"
            " preemption: not eligible due to "
            "preemptionPolicy=Never.",
            id="preemptionPolicy Never",
        ),
        pytest.param(
            Cluster(
                pods=[
                    msgspec.structs.replace(
                        victim(
                            "going", "n1", LOW, cpu="4", deletion_timestamp="2023-11-14T22:00:00Z"
                        ),
                        status=msgspec.structs.replace(
                            victim("going", "n1", LOW).status,
                            conditions=[
                                PodCondition(
                                    type="DisruptionTarget",
                                    status="True",
                                    reason="PreemptionByScheduler",
                                )
                            ],
                        ),
                    )
                ]
            ),
            preemptor(nominated_node_name="n1"),
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate,"
            " preemption: not eligible due to a "
            "terminating pod on the nominated node.",
            id="its victim on the nominated node is still terminating",
        ),
    ],
)
def test_failed_scheduling_text(cluster: Cluster, pod: Pod, message: str) -> None:
    result = cluster.run(pod)
    assert result.node is None
    assert result.message == message


def test_the_nominated_pods_are_considered_in_the_dry_run() -> None:
    # Room for one 2-cpu pod after preemption, but a higher-priority pod is nominated
    # there already: no candidate on n1.
    other = make_pod("other", priority=HIGH + 1, requests={"cpu": "2"}, nominated_node_name="n1")
    cluster = Cluster(pods=[victim("low", "n1", LOW, cpu="4")], nominated=[other])
    result = cluster.run(preemptor(cpu="3"))
    assert result.message.endswith("preemption: 0/1 nodes are available: 1 Insufficient cpu."), (
        result.message
    )


def test_lower_priority_nominations_on_the_chosen_node_are_cleared() -> None:
    lower = make_pod("lower", priority=MID, requests={"cpu": "1"}, nominated_node_name="n1")
    cluster = Cluster(pods=[victim("low", "n1", LOW, cpu="4")], nominated=[lower])
    result = cluster.run(preemptor())
    assert result.post_filter is not None
    assert [p.pod.metadata.name for p in result.post_filter.cleared_nominations] == ["lower"]


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [
        (10, 10, 100, 10),  # fewer nodes than the absolute minimum: all of them
        (5000, 10, 100, 500),
        (500, 10, 100, 100),
        (1000, 0, 50, 50),
        (1000, 40, 0, 400),
        (3, 10, 1, 1),
    ],
)
def test_number_of_candidates(nodes: int, percentage: int, absolute: int, expected: int) -> None:
    plugin = DefaultPreemption(
        DefaultPreemptionArgs(
            min_candidate_nodes_percentage=percentage, min_candidate_nodes_absolute=absolute
        ),
        Framework(default_profile(), in_tree_registry()).handle,
    )
    assert plugin.num_candidates(nodes) == expected


def test_dry_runs_stop_once_enough_candidates_are_found() -> None:
    nodes = tuple(f"n{i}" for i in range(6))
    pods = [victim(f"v{i}", f"n{i}", LOW, cpu="4", age=i) for i in range(6)]
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=2)
    # From offset 3 only n3 and n4 are tried; n3's victim started last: it wins.
    result = Cluster(nodes=nodes, pods=pods, args=args, offset=3).run(preemptor())
    assert victims_of(result) == ("n3", ["v3"])


def _info(name: str, priority: int, age: float = 100, **labels: str) -> PodInfo:
    return PodInfo.of(started(make_pod(name, priority=priority, labels=labels), age))


@pytest.mark.parametrize(
    ("pods", "budgets", "violating"),
    [
        ([_info("a", 0, app="x"), _info("b", 0, app="x")], [pdb("p", 1, app="x")], ["b"]),
        ([_info("a", 0, app="x")], [pdb("p", 1, app="x")], []),
        ([_info("a", 0)], [pdb("p", 0, app="x")], []),  # no labels: matches no PDB
        ([_info("a", 0, app="x")], [pdb("p", 0)], []),  # an empty selector matches nothing
        ([_info("a", 0, app="x")], [pdb("p", 0, app="x")], ["a"]),
    ],
)
def test_pdb_violations(
    pods: list[PodInfo], budgets: list[PodDisruptionBudget], violating: list[str]
) -> None:
    bad, good = split_by_pdb_violation(pods, budgets)
    assert [p.pod.metadata.name for p in bad] == violating
    assert len(bad) + len(good) == len(pods)


def _candidate(node: str, *victims: tuple[int, float], violations: int = 0) -> Candidate:
    infos = tuple(_info(f"{node}-{i}", p, age) for i, (p, age) in enumerate(victims))
    return Candidate(node, infos, violations)


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        ([_candidate("a", (0, 10), violations=1), _candidate("b", (5, 10))], "b"),
        ([_candidate("a", (5, 10)), _candidate("b", (3, 10), (3, 10))], "b"),
        ([_candidate("a", (3, 10), (1, 10)), _candidate("b", (3, 10), (2, 10))], "a"),
        ([_candidate("a", (3, 10), (-5, 10)), _candidate("b", (3, 10))], "b"),
        ([_candidate("a", (3, 100)), _candidate("b", (3, 50))], "b"),
        ([_candidate("a", (3, 50)), _candidate("b", (3, 50))], "a"),
    ],
    ids=[
        "fewest PDB violations",
        "lowest highest priority",
        "smallest sum of priorities",
        "negative priorities count as positive offsets",
        "latest start of the highest-priority victims",
        "then the first",
    ],
)
def test_pick_one_node(candidates: list[Candidate], chosen: str) -> None:
    best = pick_one_node(candidates, NOW)
    assert best is not None and best.node == chosen


def test_a_waiting_victim_is_rejected() -> None:
    rejected: list[tuple[str, str, str]] = []

    class Waiting:
        def __init__(self, uid: str) -> None:
            self.uid = uid

        def reject(self, plugin: str, message: str) -> None:
            rejected.append((self.uid, plugin, message))

    class Pods:
        def get_waiting_pod(self, uid: str) -> Any:
            return Waiting(uid)

    snapshot = snapshot_of([make_node("n1", allocatable=NODE)], [victim("low", "n1", LOW, cpu="4")])
    framework = Framework(
        default_profile(),
        in_tree_registry(),
        listers=snapshot.listers,
        waiting_pods=Pods(),  # type: ignore[arg-type]
        now=lambda: NOW,
    )
    result = framework.schedule_pod(snapshot, preemptor())
    assert victims_of(result) == ("n1", ["low"])
    assert rejected == [("default-low-uid", "DefaultPreemption", "preempted")]


def _random_cluster(seed: int) -> tuple[list[str], list[Pod], list[PodDisruptionBudget], Pod]:
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(rng.randint(2, 12))]
    pods: list[Pod] = []
    for node in nodes:
        used = 0
        while used < 4:
            cpu = rng.choice([1, 1, 2])
            if used + cpu > 4:
                break
            used += cpu
            app = rng.choice(["db", "web", "batch"])
            pods.append(
                victim(
                    f"{node}-{len(pods)}",
                    node,
                    rng.choice([0, 0, 5, 50, 2000]),
                    cpu=str(cpu),
                    age=rng.randint(1, 1000),
                    labels={"app": app},
                )
            )
    budgets = [pdb("db", rng.randint(0, 2), app="db")]
    return nodes, pods, budgets, preemptor(cpu=str(rng.choice([1, 2, 3, 4])))


@pytest.mark.parametrize("seed", range(40))
def test_the_columnar_dry_run_chooses_as_the_node_by_node_one(seed: int) -> None:
    names, pods, budgets, incoming = _random_cluster(seed)
    nodes = [make_node(n, allocatable=NODE) for n in names]
    columnar, node_by_node = both_dry_runs(
        nodes, pods, incoming, pdbs=budgets, offset=seed, absolute=2 + seed % 3
    )
    assert columnar == node_by_node


def test_explain_shows_the_candidates_and_why_the_node_won() -> None:
    nodes = [make_node(n, allocatable=NODE) for n in ("n1", "n2")]
    pods = [victim("mid", "n1", MID, cpu="4"), victim("low", "n2", LOW, cpu="4")]
    snapshot = snapshot_of(nodes, pods)
    framework = Framework(
        default_profile(), in_tree_registry(), rng=random.Random(0), listers=snapshot.listers
    )
    plugin = framework.plugins["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    plugin.offset = lambda n: 0
    result = framework.schedule_pod(snapshot, preemptor(), explain=True)
    assert result.explanation is not None
    assert result.explanation.to_json()["preemption"] == {
        "candidates": [
            {
                "node": "n1",
                "victims": [{"pod": "default/mid", "priority": MID}],
                "pdbViolations": 0,
            },
            {
                "node": "n2",
                "victims": [{"pod": "default/low", "priority": LOW}],
                "pdbViolations": 0,
            },
        ],
        "nominatedNode": "n2",
        "decidedBy": "lowest highest-priority victim",
    }
    # Without --explain nothing is collected.
    assert framework.schedule_pod(snapshot, preemptor()).explanation is None


@pytest.mark.parametrize(
    ("statuses", "message"),
    [
        ({}, "0/3 nodes are available: 3 Preemption is not helpful for scheduling."),
        (
            {0: Status(Code.UnschedulableAndUnresolvable, (NO_VICTIMS,)),
             1: Status(Code.UnschedulableAndUnresolvable, (NO_VICTIMS,))},
            "0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
            "2 No preemption victims found for incoming pod.",
        ),
        (  # a status of two reasons counts each; shared reasons add up
            {0: Status(Code.Unschedulable, ("Insufficient cpu", "Insufficient memory")),
             1: Status(Code.Unschedulable, ("Insufficient cpu",)),
             2: Status(Code.Unschedulable, ("Insufficient cpu", "Insufficient memory"))},
            "0/3 nodes are available: 2 Insufficient memory, 3 Insufficient cpu.",
        ),
    ],
)  # fmt: skip
def test_the_fit_error_of_a_preemption_without_candidates(
    statuses: dict[int, Status], message: str
) -> None:
    plugin = DefaultPreemption(
        DefaultPreemptionArgs(), Framework(default_profile(), in_tree_registry()).handle
    )
    nodes = snapshot_of([make_node(f"n{i}") for i in range(3)])
    assert plugin.fit_error(PodInfo.of(make_pod("p")), nodes, statuses) == message
