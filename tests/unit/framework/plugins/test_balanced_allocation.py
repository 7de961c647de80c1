"""NodeResourcesBalancedAllocation, from upstream's balanced_allocation_test.go
(without the DRA cases) and its args validation."""

from __future__ import annotations

import pytest

from services.framework.api.registry import ConfigError
from services.framework.api.status import Code, Status
from services.framework.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs
from services.framework.plugins.noderesources.balanced_allocation import ENTRY, BalancedAllocation
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.basic_plugins import scores

GPU = "nvidia.com/gpu"
CPU_AND_MEMORY = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}]
CPU_ONLY = [{"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}]
CPU_MEMORY_GPU = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}]
WITH_GPU = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU, "weight": 1}]}


def plugin(raw=None) -> BalancedAllocation:
    args = ENTRY.decode_args(raw, "")
    assert isinstance(args, NodeResourcesBalancedAllocationArgs)
    return BalancedAllocation(args)


def bound(*placements):
    return [
        make_pod(f"e{i}", requests=requests, node_name=node_name)
        for i, (requests, node_name) in enumerate(placements)
    ]


@pytest.mark.parametrize(
    ("pod_requests", "nodes", "existing", "args", "expected"),
    [
        pytest.param(
            None,
            [
                make_node("node1", allocatable={"cpu": "4000m", "memory": "10000"}),
                make_node("node2", allocatable={"cpu": "4000m", "memory": "10000"}),
            ],
            [],
            None,
            Status(Code.Skip),
            id="nothing requested: skip in PreScore",
        ),
        # node1: cpu 3000/4000, memory 5000/10000: std 0.125 -> 87; node2: 50%, 50% -> 100
        pytest.param(
            CPU_AND_MEMORY,
            [
                make_node("node1", allocatable={"cpu": "4000m", "memory": "10000"}),
                make_node("node2", allocatable={"cpu": "6000m", "memory": "10000"}),
            ],
            [],
            None,
            [87, 100],
            id="nothing scheduled, differently sized nodes",
        ),
        # node1: 6000/10000, 5000/20000 -> 82; node2: 6000/10000, 10000/20000 -> 95
        pytest.param(
            CPU_AND_MEMORY,
            [
                make_node("node1", allocatable={"cpu": "10000m", "memory": "20000"}),
                make_node("node2", allocatable={"cpu": "10000m", "memory": "20000"}),
            ],
            [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
            None,
            [82, 95],
            id="pods scheduled with resources",
        ),
        # node2: 6000/10000, 10000/50000 -> std 0.2 -> 80
        pytest.param(
            CPU_AND_MEMORY,
            [
                make_node("node1", allocatable={"cpu": "10000m", "memory": "20000"}),
                make_node("node2", allocatable={"cpu": "10000m", "memory": "50000"}),
            ],
            [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
            None,
            [82, 80],
            id="pods scheduled with resources, differently sized nodes",
        ),
        # node1: cpu 6000/6000, memory 0 -> std 0.5 -> 50; node2: 1, 0.5 -> 75
        pytest.param(
            CPU_ONLY,
            [
                make_node("node1", allocatable={"cpu": "6000m", "memory": "10000"}),
                make_node("node2", allocatable={"cpu": "6000m", "memory": "10000"}),
            ],
            [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
            None,
            [50, 75],
            id="requested resources at node capacity",
        ),
        # three fractions: population standard deviation
        pytest.param(
            {"memory": "0", GPU: "1"},
            [
                make_node("node1", allocatable={"cpu": "3500m", "memory": "40000", GPU: "8"}),
                make_node("node2", allocatable={"cpu": "3500m", "memory": "40000", GPU: "8"}),
            ],
            [(CPU_AND_MEMORY, "node2"), (CPU_MEMORY_GPU, "node1")],
            WITH_GPU,
            [70, 65],
            id="include scalar resource",
        ),
        pytest.param(
            CPU_AND_MEMORY,
            [
                make_node("node1", allocatable={"cpu": "3500m", "memory": "40000", GPU: "8"}),
                make_node("node2", allocatable={"cpu": "3500m", "memory": "40000"}),
            ],
            [],
            WITH_GPU,
            [63, 63],
            id="scalar resource the pod doesn't request is skipped",
        ),
        pytest.param(
            {"cpu": "1"},
            [
                make_node("node1", allocatable={"cpu": "4000m", "memory": "0"}),
                make_node("node2", allocatable={"cpu": "4000m", "memory": "10000"}),
            ],
            [],
            None,
            [100, 87],
            id="a resource the node lacks is left out",
        ),
    ],
)
def test_score(pod_requests, nodes, existing, args, expected):
    pod = make_pod(requests=pod_requests)
    assert scores(plugin(args), pod, nodes, bound(*existing)) == expected


def test_score_without_pre_score():
    nodes = [
        make_node("node1", allocatable={"cpu": "10000m", "memory": "20000"}),
        make_node("node2", allocatable={"cpu": "10000m", "memory": "20000"}),
    ]
    existing = bound((CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2"))
    pod = make_pod(requests=CPU_AND_MEMORY)
    assert scores(plugin(), pod, nodes, existing, pre_score=False) == [82, 95]
    assert scores(plugin(), make_pod(), nodes, existing, pre_score=False) == [0, 0]


def test_defaults_are_cpu_and_memory():
    args = NodeResourcesBalancedAllocationArgs().defaulted()
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1), ("memory", 1)]


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        ({"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight", "must be 1"),
        (
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            "resources[1].name",
            'Duplicate value: "cpu"',
        ),
    ],
)
def test_args_validation(raw, field, reason):
    with pytest.raises(ConfigError) as err:
        ENTRY.decode_args(raw, "")
    assert err.value.field == field
    assert reason in err.value.reason
