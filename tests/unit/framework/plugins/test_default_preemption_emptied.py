"""DefaultPreemption's columnar dry run on nodes every pod of which has a lower priority
than the preemptor: removing them all leaves the node empty (``Snapshot.without_pods``
clears the row), and a node the pod does not fit even empty gets its status before any
victim list is sorted or split by PDB. The outcome must be the node-by-node dry run's
(``SelectVictimsOnNode`` per node): the same candidates, victims and message."""

from __future__ import annotations

import random

import pytest

from contracts.k8s import Node, Pod
from services.framework.api.diagnosis import Diagnosis
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.defaultpreemption.plugin import NO_VICTIMS
from tests.builders import container, host_port, make_node, make_pod
from tests.unit.framework.plugins.preemption_support import both_dry_runs, framework_for

HIGH = 1000
NODE = {"cpu": "4", "memory": "8Gi", "pods": 110}


def _pod(
    name: str,
    priority: int,
    cpu: str,
    node: str | None = None,
    port: int | None = None,
    memory: str = "1Gi",
) -> Pod:
    ports = [host_port(port)] if port is not None else []
    spec = container({"cpu": cpu, "memory": memory}, ports=ports)
    return make_pod(name, node_name=node, priority=priority, requests=[spec])


def _insufficient(*resources: str) -> Status:
    return Status(
        Code.Unschedulable, tuple(f"Insufficient {r}" for r in resources), "NodeResourcesFit"
    )


PORTS_TAKEN = Status(
    Code.Unschedulable, ("node(s) didn't have free ports for the requested pod ports",), "NodePorts"
)

NO_VICTIMS_STATUS = Status(Code.UnschedulableAndUnresolvable, (NO_VICTIMS,))

SETTLE = {
    "a node without pods has no victims": ([], _pod("p", HIGH, "2"), NO_VICTIMS_STATUS),
    "every pod lower, the pod fits the emptied node: a candidate": (
        [_pod("low", 0, "3", "n")],
        _pod("p", HIGH, "2"),
        ["low"],
    ),
    "every pod lower, too large even for the emptied node": (
        [_pod("low", 0, "3", "n")],
        _pod("p", HIGH, "5"),
        _insufficient("cpu"),
    ),
    "every pod lower and holding the port: the emptied node has it free": (
        [_pod("low", 0, "1", "n", port=80)],
        _pod("p", HIGH, "1", port=80),
        ["low"],
    ),
    "a pod of the same priority stays, and still leaves no room": (
        [_pod("same", HIGH, "1", "n"), _pod("low", 0, "1", "n")],
        _pod("p", HIGH, "5"),
        _insufficient("cpu"),
    ),
    "a higher-priority pod stays: no victims": (
        [_pod("top", HIGH + 1, "1", "n")],
        _pod("p", HIGH, "5"),
        NO_VICTIMS_STATUS,
    ),
}


@pytest.mark.parametrize(("pods", "incoming", "expected"), SETTLE.values(), ids=SETTLE.keys())
def test_a_node_emptied_of_lower_pods(
    pods: list[Pod], incoming: Pod, expected: Status | list[str]
) -> None:
    """A node is either a candidate (with its victims) or gets the status of the
    filters on it without its lower-priority pods, emptied when they were all."""
    framework, plugin, cache = framework_for([make_node("n", allocatable=NODE)], pods)
    view = cache.snapshot()
    info = PodInfo.of(incoming)
    state = CycleState()
    assert framework.run_pre_filter_plugins(state, info, view).is_success()
    diagnosis = Diagnosis(num_nodes=1, node_status=lambda _row: Status(Code.Unschedulable))
    candidates, statuses, errors = plugin.find_candidates(state, info, view, diagnosis)
    assert errors == []
    if isinstance(expected, Status):
        assert (candidates, statuses) == ([], {0: expected})
    else:
        assert [(c.node, [v.pod.metadata.name for v in c.victims]) for c in candidates] == [
            ("n", expected)
        ]
        assert statuses == {}


def _cluster(seed: int) -> tuple[list[Node], list[Pod], Pod]:
    """Nodes of 1 to 6 cpu (some capped at few pods); pods of random priorities, some
    holding host port 80; a preemptor that sometimes fits no node even empty or wants
    port 80. Node ``tiny`` (1 cpu, one low pod) and node ``bare`` (no pod) are always
    there, so every run has both kinds of row."""
    rng = random.Random(seed)
    nodes = [make_node("tiny", allocatable={"cpu": "1", "memory": "8Gi", "pods": 110})]
    nodes.append(make_node("bare", allocatable={"cpu": "1", "memory": "8Gi", "pods": 110}))
    pods = [_pod("tiny-0", 0, "1", "tiny")]
    for i in range(rng.randint(2, 10)):
        cpu = rng.choice([2, 4, 6])
        name = f"n{i}"
        allowed = rng.choice([110, 110, 2])
        allocatable = {"cpu": str(cpu), "memory": "8Gi", "pods": allowed}
        nodes.append(make_node(name, allocatable=allocatable))
        used = 0
        for k in range(rng.randint(0, allowed)):
            want = rng.choice([1, 1, 2])
            if used + want > cpu:
                break
            used += want
            port = 80 if rng.random() < 0.2 else None
            priority = rng.choice([0, 0, 5, 50, HIGH, 2000])
            pods.append(_pod(f"{name}-{k}", priority, str(want), name, port))
    port = 80 if rng.random() < 0.3 else None
    return nodes, pods, _pod("p", HIGH, str(rng.choice([1, 2, 3, 4, 5, 7])), port=port)


@pytest.mark.parametrize("seed", range(60))
def test_emptied_nodes_choose_as_the_node_by_node_dry_run(seed: int) -> None:
    nodes, pods, incoming = _cluster(seed)
    columnar, node_by_node = both_dry_runs(
        nodes, pods, incoming, offset=seed, absolute=1 + seed % 4
    )
    assert columnar == node_by_node


def test_the_fit_error_names_each_emptied_node_s_own_reason() -> None:
    """5 cpu and 2Gi fit no node even empty, each for its own reason (rows rejected by
    one plugin with different codes keep different statuses)."""
    nodes = [
        make_node("a", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110}),
        make_node("b", allocatable={"cpu": "8", "memory": "1Gi", "pods": 110}),
        make_node("c", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110}),
    ]
    pods = [_pod("a-0", 0, "1", "a"), _pod("b-0", 0, "1", "b")]
    framework, _, cache = framework_for(nodes, pods)
    result = framework.schedule_pod(cache, PodInfo.of(_pod("p", HIGH, "5", memory="2Gi")))
    assert result.node is None
    assert result.message == (
        "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient cpu. "
        "no new claims to deallocate,"
        " preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 No preemption victims found for incoming pod."
    )


def test_a_diagnosis_of_no_unschedulable_node_tries_nothing() -> None:
    _, plugin, cache = framework_for([make_node("n")], [_pod("low", 0, "1", "n")])
    view = cache.snapshot()
    info = PodInfo.of(_pod("p", HIGH, "9"))
    diagnosis = Diagnosis(
        num_nodes=1, node_status=lambda _row: Status(Code.UnschedulableAndUnresolvable)
    )
    assert plugin.find_candidates(CycleState(), info, view, diagnosis) == ([], {}, [])
