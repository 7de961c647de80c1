"""NodeResourcesFit's RequestedToCapacityRatio strategy, from upstream's
requested_to_capacity_ratio_test.go, and the validation of its shape."""

from __future__ import annotations

import numpy as np
import pytest

from services.framework.api.registry import ConfigError
from services.framework.config import load_config
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.noderesources.args import NodeResourcesFitArgs
from services.framework.plugins.noderesources.fit import Fit
from services.framework.plugins.noderesources.requested_to_capacity_ratio import (
    broken_linear,
    scaled_utilization,
)
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.basic_plugins import configuration, registry, scores

LEAST = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
BIN_PACK = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]
CPU_MEMORY = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
FOO, BAR = "intel.com/foo", "intel.com/bar"


def fit(resources, shape) -> Fit:
    raw = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": resources,
            "requestedToCapacityRatio": {"shape": shape},
        }
    }
    args = in_tree_registry()["NodeResourcesFit"].decode_args(raw, "")
    assert isinstance(args, NodeResourcesFitArgs)
    return Fit(args)


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "expected"),
    [
        pytest.param(
            make_pod(),
            [
                make_node("node1", allocatable={"cpu": "4000", "memory": "10000", "pods": 110}),
                make_node("node2", allocatable={"cpu": "4000", "memory": "10000", "pods": 110}),
            ],
            [make_pod("e1", node_name="node1"), make_pod("e2", node_name="node1")],
            [100, 100],
            id="nothing scheduled, nothing requested",
        ),
        # node1: cpu 75% -> 25, memory 50% -> 50: round(37.5) = 38
        pytest.param(
            make_pod(
                requests=[{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]
            ),
            [
                make_node("node1", allocatable={"cpu": "4000", "memory": "10000", "pods": 110}),
                make_node("node2", allocatable={"cpu": "6000", "memory": "10000", "pods": 110}),
            ],
            [make_pod("e1", node_name="node1"), make_pod("e2", node_name="node1")],
            [38, 50],
            id="resources requested, differently sized nodes",
        ),
        pytest.param(
            make_pod(),
            [
                make_node("node1", allocatable={"cpu": "4000", "memory": "10000", "pods": 110}),
                make_node("node2", allocatable={"cpu": "6000", "memory": "10000", "pods": 110}),
            ],
            [
                make_pod("e1", node_name="node1", requests={"cpu": "3000", "memory": "5000"}),
                make_pod("e2", node_name="node2", requests={"cpu": "3000", "memory": "5000"}),
            ],
            [38, 50],
            id="no resources requested, pods scheduled with resources",
        ),
    ],
)
def test_least_requested_shape(pod, nodes, existing, expected):
    assert scores(fit(CPU_MEMORY, LEAST), pod, nodes, existing) == expected


def extended_nodes(first: dict[str, int], second: dict[str, int]):
    memory = str(10000 * 1024 * 1024)
    return [
        make_node(
            "node1",
            allocatable={
                "cpu": "4",
                "memory": memory,
                "pods": 110,
                **{k: str(v) for k, v in first.items()},
            },
        ),
        make_node(
            "node2",
            allocatable={
                "cpu": "4",
                "memory": memory,
                "pods": 110,
                **{k: str(v) for k, v in second.items()},
            },
        ),
    ]


@pytest.mark.parametrize(
    ("requests", "existing", "expected"),
    [
        pytest.param(None, [], [0, 0], id="nothing requested"),
        pytest.param({FOO: "2"}, [], [2, 5], id="requested, less on node1"),
        pytest.param(
            {FOO: "2"},
            [make_pod("e", node_name="node2", requests={FOO: "2"})],
            [2, 10],
            id="requested, node2 full after",
        ),
        pytest.param({FOO: "4"}, [], [5, 10], id="requested more"),
    ],
)
def test_bin_packing_single_extended(requests, existing, expected):
    nodes = extended_nodes({FOO: 8}, {FOO: 4})
    plugin = fit([{"name": FOO, "weight": 1}], BIN_PACK)
    assert scores(plugin, make_pod(requests=requests), nodes, existing) == expected


@pytest.mark.parametrize(
    ("requests", "existing", "expected"),
    [
        pytest.param(None, [], [0, 0], id="nothing requested"),
        # node1: foo 25% -> 2, bar 50% -> 5: (2*3 + 5*5) / 8 = 3.875 -> 4
        pytest.param({FOO: "2", BAR: "2"}, [], [4, 3], id="requested"),
        # node2: foo 6/4 -> 10, bar 4/8 -> 5: (30 + 25) / 8 = 6.875 -> 7
        pytest.param(
            {FOO: "2", BAR: "2"},
            [make_pod("e", node_name="node2", requests={FOO: "4", BAR: "2"})],
            [4, 7],
            id="with a pod running on node2",
        ),
        pytest.param({FOO: "4", BAR: "2"}, [], [5, 5], id="requested more"),
    ],
)
def test_bin_packing_multiple_extended(requests, existing, expected):
    nodes = extended_nodes({FOO: 8, BAR: 4}, {FOO: 4, BAR: 8})
    plugin = fit([{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}], BIN_PACK)
    assert scores(plugin, make_pod(requests=requests), nodes, existing) == expected


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        (
            ((10, 1), (90, 9)),
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            ((0, 2), (40, 10), (100, 0)),
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        ),
        (
            ((0, 2), (40, 2), (100, 2)),
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        ),
        (((0, 10), (100, 0)), [(33, 7), (67, 4)]),
    ],
    ids=["increasing", "up and down", "flat", "decreasing truncates toward zero"],
)
def test_broken_linear_function(points, assertions):
    p = np.asarray([a for a, _ in assertions], dtype=np.int64)
    assert broken_linear(points, p).tolist() == [b for _, b in assertions]


def test_scaled_utilization_is_exact_and_clamped():
    requested = np.asarray([0, 1, 5, 10, 11, -1, 2**62], dtype=np.int64)
    capacity = np.asarray([10, 3, 10, 10, 10, 10, 2**62 + 1], dtype=np.int64)
    assert scaled_utilization(requested, capacity).tolist() == [0, 33, 50, 100, 100, 0, 99]
    assert scaled_utilization(np.asarray([5]), np.asarray([0])).tolist() == [0]


def fit_config(strategy):
    args = {"scoringStrategy": strategy}
    return configuration([{"name": "NodeResourcesFit", "args": args}])


def test_loads_from_a_configuration_file():
    strategy = {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu"}],
        "requestedToCapacityRatio": {"shape": LEAST},
    }
    profile = load_config(fit_config(strategy), registry=registry()).profiles[0]
    args = profile.plugin_args["NodeResourcesFit"]
    assert isinstance(args, NodeResourcesFitArgs)
    assert args.scoring_strategy is not None
    assert args.scoring_strategy.resources[0].weight == 1


@pytest.mark.parametrize(
    ("ratio", "field", "reason"),
    [
        ({"shape": []}, "shape", "at least one point must be specified"),
        (
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]},
            "shape[1].utilization",
            "values must be sorted in increasing order",
        ),
        (
            {"shape": [{"utilization": 101, "score": 1}]},
            "shape[0].utilization",
            "not in valid range [0, 100]",
        ),
        (
            {"shape": [{"utilization": 10, "score": 11}]},
            "shape[0].score",
            "not in valid range [0, 10]",
        ),
        (None, "requestedToCapacityRatio", "Required value"),
        ({"shape": [{"utilization": 0, "score": 0, "x": 1}]}, "shape[0].x", "unknown field"),
    ],
    ids=["empty", "unsorted", "utilization", "score", "missing", "unknown field"],
)
def test_shape_validation(ratio, field, reason):
    strategy = {"type": "RequestedToCapacityRatio"}
    if ratio is not None:
        strategy["requestedToCapacityRatio"] = ratio
    with pytest.raises(ConfigError) as err:
        load_config(fit_config(strategy), registry=registry())
    prefix = "profiles[0].pluginConfig[0].args.scoringStrategy"
    expected_field = f"{prefix}.{field}"
    if field == "shape[0].x":
        expected_field = f"{prefix}.requestedToCapacityRatio.{field}"
    assert err.value.field == expected_field
    assert reason in err.value.reason
