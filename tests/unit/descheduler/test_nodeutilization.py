"""Upstream's TestLowNodeUtilization (nodeutilization/lownodeutilization_test.go, the
requests-based cases) and HighNodeUtilization: the number of pods evicted."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import Node, Pod
from services.descheduler.plugins.nodeutilization import (
    EvictionLimits,
    HighNodeUtilizationArgs,
    LowNodeUtilizationArgs,
    new_high,
    new_low,
)
from services.descheduler.podutil import Namespaces
from services.framework.api.registry import ConfigError
from tests.unit.descheduler.nodeutilization_support import (
    DS,
    FIVE,
    NORMAL,
    P9,
    RS,
    STATIC,
    nodes,
    unevictable,
)
from tests.unit.descheduler.support import build_node, build_pod, evicted_names, run_plugin, with_

CASES: dict[str, tuple[dict[str, Any], list[Node], list[Pod], int]] = {
    "no evictable pods": (
        STATIC,
        nodes(),
        [build_pod(f"p{i}", 400, 0, "n1", owners=DS) for i in range(1, 5)] + unevictable() + [P9],
        0,
    ),
    "without priorities": (STATIC, nodes(), FIVE + unevictable() + [P9], 4),
    "without priorities, but excluding namespaces": (
        {**STATIC, "evictable_namespaces": Namespaces(exclude=["namespace1"])},
        nodes(),
        [with_(p, meta_namespace="namespace1", meta_owner_references=NORMAL) for p in FIVE]
        + unevictable()
        + [P9],
        0,
    ),
    "without priorities, but only other node is unschedulable": (
        STATIC,
        nodes(n2_unschedulable=True, n3=False),
        FIVE + unevictable(),
        0,
    ),
    "deviation thresholds": (
        {
            "thresholds": {"cpu": 5, "pods": 5},
            "target_thresholds": {"cpu": 5, "pods": 5},
            "use_deviation_thresholds": True,
        },
        nodes(),
        FIVE + unevictable() + [P9],
        2,
    ),
    "without priorities with node eviction limit": (
        {**STATIC, "eviction_limits": EvictionLimits(node=2)},
        nodes(),
        FIVE + unevictable() + [P9],
        2,
    ),
}


@pytest.mark.parametrize(("args", "cluster", "pods", "evicted"), CASES.values(), ids=CASES.keys())
def test_low_node_utilization(
    args: dict[str, Any], cluster: list[Node], pods: list[Pod], evicted: int
) -> None:
    evictor = run_plugin(new_low, LowNodeUtilizationArgs(**args), cluster, pods, balance=True)
    assert evictor.total_evicted == evicted


def test_lowest_priority_first_from_the_most_used_node() -> None:
    pods = [
        build_pod("high", 400, 0, "n1", owners=RS, spec_priority=100),
        build_pod("low", 400, 0, "n1", owners=RS, spec_priority=0),
        *[build_pod(f"f{i}", 400, 0, "n1", owners=RS, spec_priority=50) for i in range(6)],
        P9,
    ]
    evictor = run_plugin(new_low, LowNodeUtilizationArgs(**STATIC), nodes(), pods, balance=True)
    assert evicted_names(evictor)[0] == "low"
    assert "high" not in evicted_names(evictor)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            LowNodeUtilizationArgs(thresholds={"cpu": 30}, target_thresholds={"cpu": 20}),
            "x.thresholds.cpu: thresholds' cpu percentage is greater than targetThresholds'",
        ),
        (
            LowNodeUtilizationArgs(thresholds={"cpu": 30}, target_thresholds={"memory": 50}),
            "x: thresholds and targetThresholds configured different resources",
        ),
        (
            LowNodeUtilizationArgs(thresholds={"cpu": 120}, target_thresholds={"cpu": 130}),
            "x.thresholds.cpu: thresholds config is not valid: cpu threshold not in [0, 100] range",
        ),
        (
            LowNodeUtilizationArgs(thresholds={}, target_thresholds={}),
            "x.thresholds: thresholds config is not valid: no resource threshold is configured",
        ),
        (
            LowNodeUtilizationArgs(
                thresholds={"cpu": 1},
                target_thresholds={"cpu": 2},
                evictable_namespaces=Namespaces(include=["a"]),
            ),
            "x.evictableNamespaces: only Exclude namespaces can be set, inclusion is not supported",
        ),
    ],
)
def test_low_node_utilization_args(args: LowNodeUtilizationArgs, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        args.validate("x")
    assert str(caught.value) == message


def test_high_node_utilization_empties_the_least_used_node() -> None:
    cluster = [build_node("n1", 4000, 3000, 10), build_node("n2", 4000, 3000, 10)]
    pods = [
        build_pod("a", 400, 0, "n1", owners=RS),
        build_pod("b", 400, 0, "n2", owners=RS),
        build_pod("c", 400, 0, "n2", owners=RS),
        build_pod("d", 400, 0, "n2", owners=RS),
        build_pod("e", 400, 0, "n2", owners=RS),
    ]
    args = HighNodeUtilizationArgs(thresholds={"cpu": 20, "pods": 20})
    evictor = run_plugin(new_high, args, cluster, pods, balance=True)
    assert evicted_names(evictor) == ["a"]
