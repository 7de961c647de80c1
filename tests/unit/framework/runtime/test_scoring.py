"""LeastAllocated and MostAllocated scores: the cases of upstream's
least_allocated_test.go and most_allocated_test.go, with their expected numbers."""

from __future__ import annotations

import numpy as np
import pytest

from services.framework.api.interface import CycleState
from services.framework.api.registry import ConfigError
from services.framework.api.status import StatusError
from services.framework.api.types import PodInfo
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.helper.intdiv import go_div
from services.framework.plugins.noderesources.args import (
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from services.framework.plugins.noderesources.fit import Fit
from services.framework.plugins.noderesources.least_allocated import least_requested_score
from services.framework.plugins.noderesources.resource_allocation import ResourceAllocationScorer
from tests.builders import make_node, make_pod
from tests.unit.framework.helpers import all_rows, snapshot_of

EXT = "abc.com/xyz"
DEFAULT = (ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1))
WITH_EXT = (*DEFAULT, ResourceSpec(name=EXT, weight=1))
MEMORY2_CPU1 = (ResourceSpec(name="memory", weight=2), ResourceSpec(name="cpu", weight=1))
EXT2 = (
    ResourceSpec(name=EXT, weight=2),
    ResourceSpec(name="cpu", weight=1),
    ResourceSpec(name="memory", weight=1),
)


def cap(cpu, memory, **extra):
    return {"cpu": cpu, "memory": memory, **extra}


TWO_REQ = [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]


def existing(*placements):
    return [
        make_pod(f"e{i}", node_name=n, requests=r)
        if r is not None
        else make_pod(f"e{i}", node_name=n)
        for i, (n, r) in enumerate(placements)
    ]


def scores(strategy, resources, pod, nodes, pods=()):
    args = NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(type=strategy, resources=resources)
    )
    fit = Fit(args)
    snapshot = snapshot_of(nodes, pods)
    table, rows = snapshot.snapshot(), all_rows(snapshot)
    state, info = CycleState(), PodInfo.of(pod)
    assert fit.pre_score(state, info, table, rows).is_success()
    return fit.score_all(state, info, table, rows).tolist()


def n(name, c, m, **extra):
    return make_node(name, capacity=cap(c, m, **extra))


CASES = [
    # name, pod, nodes, existing pods, resources, least, most
    (
        "nothing scheduled, nothing requested",
        make_pod(),
        [n("node1", "4000", "10000"), n("node2", "4000", "10000")],
        [],
        DEFAULT,
        [100, 100],
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        make_pod(requests=TWO_REQ),
        [n("node1", "4000", "10000"), n("node2", "6000", "10000")],
        [],
        DEFAULT,
        [37, 50],
        [62, 50],
    ),
    (
        "no resources requested, pods scheduled",
        make_pod(),
        [n("node1", "4000", "10000"), n("node2", "4000", "10000")],
        existing(("node1", None), ("node1", None), ("node2", None), ("node2", None)),
        DEFAULT,
        [100, 100],
        [0, 0],
    ),
    (
        "no resources requested, pods scheduled with resources",
        make_pod(),
        [n("node1", "10000", "20000"), n("node2", "10000", "20000")],
        existing(
            ("node1", {"cpu": "3000", "memory": "0"}),
            ("node1", {"cpu": "3000", "memory": "0"}),
            ("node2", {"cpu": "3000", "memory": "0"}),
            ("node2", {"cpu": "3000", "memory": "5000"}),
        ),
        DEFAULT,
        [70, 57],
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        make_pod(requests=TWO_REQ),
        [n("node1", "10000", "20000"), n("node2", "10000", "20000")],
        existing(
            ("node1", {"cpu": "3000", "memory": "0"}), ("node2", {"cpu": "3000", "memory": "5000"})
        ),
        DEFAULT,
        [57, 45],
        [42, 55],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        make_pod(requests=TWO_REQ),
        [n("node1", "10000", "20000"), n("node2", "10000", "50000")],
        existing(
            ("node1", {"cpu": "3000", "memory": "0"}), ("node2", {"cpu": "3000", "memory": "5000"})
        ),
        DEFAULT,
        [57, 60],
        None,
    ),
    (
        "requested resources exceed node capacity",
        make_pod(requests={"cpu": "3000", "memory": "0"}),
        [n("node1", "4000", "10000"), n("node2", "4000", "10000")],
        existing(
            ("node1", {"cpu": "3000", "memory": "0"}), ("node2", {"cpu": "3000", "memory": "5000"})
        ),
        DEFAULT,
        [50, 25],
        None,
    ),
    (
        "zero node resources, pods scheduled with resources",
        make_pod(),
        [make_node("node1", capacity={}), make_node("node2", capacity={})],
        existing(
            ("node1", {"cpu": "3000", "memory": "0"}), ("node2", {"cpu": "3000", "memory": "5000"})
        ),
        DEFAULT,
        [0, 0],
        None,
    ),
    (
        "resources requested equal node capacity",
        make_pod(requests=[{"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}]),
        [n("node1", "5000", "10000"), n("node2", "10000", "9000")],
        [],
        DEFAULT,
        None,
        [95, 75],
    ),
    (
        "different weight on CPU and memory",
        make_pod(requests=TWO_REQ),
        [n("node1", "4000", "10000"), n("node2", "6000", "10000")],
        [],
        MEMORY2_CPU1,
        [41, 50],
        [58, 50],
    ),
    (
        "nonzero request for resource",
        make_pod(containers=1),
        [n("node1", "250m", "1000Mi"), n("node2", "250m", "1000Mi")],
        [
            make_pod("e0", node_name="node1", containers=1),
            make_pod("e1", node_name="node1", containers=1),
        ],
        DEFAULT,
        None,
        [80, 30],
    ),
    (
        "bypass extended resource if the pod does not request",
        make_pod(requests=TWO_REQ),
        [n("node1", "6000", "10000"), n("node2", "6000", "10000", **{EXT: "4"})],
        [],
        WITH_EXT,
        [50, 50],
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        make_pod(requests={"cpu": "3000", "memory": "5000", EXT: "2"}),
        [n("node1", "6000", "10000", **{EXT: "4"}), n("node2", "6000", "10000", **{EXT: "10"})],
        [],
        WITH_EXT,
        [50, 60],
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        make_pod(requests={"cpu": "3000", "memory": "4000"}),
        [n("node1", "6000", "10000"), n("node2", "6000", "10000", **{EXT: "4"})],
        [],
        EXT2,
        [55, 55],
        [45, 45],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "resources", "expected"),
    [pytest.param(*c[1:5], c[5], id=c[0]) for c in CASES if c[5] is not None],
)
def test_least_allocated(pod, nodes, pods, resources, expected):
    assert scores("LeastAllocated", resources, pod, nodes, pods) == expected


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "resources", "expected"),
    [pytest.param(*c[1:5], c[6], id=c[0]) for c in CASES if c[6] is not None],
)
def test_most_allocated(pod, nodes, pods, resources, expected):
    assert scores("MostAllocated", resources, pod, nodes, pods) == expected


def test_resources_not_set_is_an_error():
    scorer = ResourceAllocationScorer("LeastAllocated", (), least_requested_score)
    table = snapshot_of([make_node("n")]).snapshot()
    with pytest.raises(StatusError, match="resources not found"):
        scorer.score(table, np.arange(1), ())


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ([{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}], "resources[0].weight"),
        ([{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}], None),
        ([{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}], "resources[1].weight"),
    ],
    ids=["negative weight", "zero weight defaults to 1 in v1", "weight above 100"],
)
def test_weight_validation(resources, field):
    entry = in_tree_registry()["NodeResourcesFit"]
    raw = {"scoringStrategy": {"type": "LeastAllocated", "resources": resources}}
    if field is None:
        entry.decode_args(raw, "")
        return
    with pytest.raises(ConfigError) as err:
        entry.decode_args(raw, "")
    assert err.value.field == f"scoringStrategy.{field}"
    assert "not in valid range [1, 100]" in err.value.reason


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (6, 3, 2), (-6, 3, -2), (0, 5, 0)],
)
def test_go_div_truncates_toward_zero(a, b, expected):
    assert go_div(np.array([a], np.int64), np.array([b], np.int64)).tolist() == [expected]
    assert go_div(np.array([a], np.int64), b).tolist() == [expected]
