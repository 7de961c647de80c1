"""The rest of upstream's lownodeutilization_test.go, case by case with upstream's names and
expectations:

- TestLowNodeUtilization: the cases test_nodeutilization.py and
  test_metrics_utilization.py do not port, each run twice as upstream runs it, on the
  requests (``expectedPodsEvicted``) and on the collected NodeMetrics/PodMetrics
  (``expectedPodsWithMetricsEvicted``);
- TestLowNodeUtilizationWithTaints: every case.

As upstream's handles do, the evictor is DefaultEvictor with ``NodeFit: true``. Where
upstream lists ``evictedPods``, its fake client fails any other eviction: the pods
evicted are exactly those. The builders are in nodeutilization_upstream_support.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from contracts.k8s import (
    Node,
    NodeMetrics,
    Pod,
    PodMetrics,
    Toleration,
)
from services.descheduler.evictions import Limits, PodEvictor
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.nodeutilization import (
    EvictionLimits,
    LowNodeUtilizationArgs,
    MetricsUtilization,
    new_low,
)
from services.descheduler.podutil import Namespaces
from services.descheduler.usage import NodeUsageCollector
from tests.unit.descheduler.nodeutilization_support import node_metrics, pod_metrics
from tests.unit.descheduler.nodeutilization_upstream_support import (
    HIGH_PRIORITY,
    KEY_TAINT,
    LOW_PRIORITY,
    NORMAL,
    bare,
    best_effort,
    critical,
    ds,
    five_metrics,
    local_mirror,
    rs,
    three_nodes,
    west_affinity,
)
from tests.unit.descheduler.support import (
    build_node,
    build_pod,
    evicted_names,
    run_plugin,
)

STATIC = {"cpu": 30.0, "pods": 30.0}
TARGET = {"cpu": 50.0, "pods": 50.0}
N1N2N3 = [node_metrics("n1", 3201), node_metrics("n2", 401), node_metrics("n3", 11)]


@dataclass
class LowCase:
    nodes: list[Node]
    pods: list[Pod]
    node_metrics: list[NodeMetrics]
    pod_metrics: list[PodMetrics]
    evicted: int
    evicted_with_metrics: int
    names: list[str] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=lambda: dict(STATIC))
    target_thresholds: dict[str, float] = field(default_factory=lambda: dict(TARGET))
    use_deviation_thresholds: bool = False
    evictable_namespaces: Namespaces | None = None
    eviction_limits: EvictionLimits | None = None


LOW: dict[str, LowCase] = {
    "without priorities, but include only default namespace": LowCase(
        three_nodes(),
        [
            rs("p1", "n1"),
            rs("p2", "n1"),
            bare("p3", "n1", meta_namespace="namespace3"),
            bare("p4", "n1", meta_namespace="namespace4"),
            bare("p5", "n1", meta_namespace="namespace5"),
            ds("p6", "n1"),
            local_mirror("p7", "n1"),
            critical("p8", "n1"),
            rs("p9", "n2"),
        ],
        N1N2N3,
        five_metrics(),
        2,
        2,
        evictable_namespaces=Namespaces(include=["default"]),
    ),
    "without priorities stop when cpu capacity is depleted": LowCase(
        three_nodes(),
        [
            *(rs(f"p{i}", "n1") for i in range(1, 6)),
            ds("p6", "n1"),
            local_mirror("p7", "n1"),
            critical("p8", "n1"),
            rs("p9", "n2"),
        ],
        [node_metrics("n1", 3201), node_metrics("n2", 401), node_metrics("n3", 0)],
        five_metrics(),
        4,
        4,
    ),
    "with priorities": LowCase(
        three_nodes(),
        [
            *(rs(f"p{i}", "n1", spec_priority=HIGH_PRIORITY) for i in range(1, 5)),
            rs("p5", "n1", spec_priority=LOW_PRIORITY),
            ds("p6", "n1", spec_priority=HIGH_PRIORITY),
            local_mirror("p7", "n1", spec_priority=LOW_PRIORITY),
            critical("p8", "n1"),
            rs("p9", "n2"),
        ],
        N1N2N3,
        five_metrics(),
        4,
        4,
    ),
    "without priorities evicting best-effort pods only": LowCase(
        three_nodes(),
        [
            best_effort(rs("p1", "n1")),
            best_effort(rs("p2", "n1")),
            rs("p3", "n1"),
            best_effort(rs("p4", "n1")),
            best_effort(rs("p5", "n1")),
            ds("p6", "n1"),
            local_mirror("p7", "n1"),
            critical("p8", "n1"),
            rs("p9", "n2"),
        ],
        N1N2N3,
        five_metrics(),
        4,
        4,
        names=["p1", "p2", "p4", "p5"],
    ),
    "without priorities, but only other node doesn't match pod node affinity for p4 and "
    "p5": LowCase(
        [
            build_node("n1", 4000, 3000, 9),
            build_node("n2", 4000, 3000, 10, labels={"datacenter": "east"}),
        ],
        [
            rs("p1", "n1"),
            rs("p2", "n1"),
            rs("p3", "n1"),
            build_pod("p4", 400, 0, "n1", owners=NORMAL, spec_affinity=west_affinity()),
            build_pod("p5", 400, 0, "n1", owners=NORMAL, spec_affinity=west_affinity()),
            ds("p6", "n1"),
            local_mirror("p7", "n1"),
            critical("p8", "n1"),
            rs("p9", "n2", 0, 0),
        ],
        [node_metrics("n1", 3201), node_metrics("n2", 401)],
        [pod_metrics(f"p{i}", 401) for i in range(1, 4)],
        3,
        3,
    ),
    "deviation thresholds and overevicting memory": LowCase(
        [
            build_node("n1", 4000, 3000, 10),
            build_node("n2", 4000, 3000, 10),
            build_node("n3", 4000, 3000, 10, unschedulable=True),
        ],
        [
            *(rs(f"p{i}", "n1", 400, 375) for i in range(1, 6)),
            ds("p6", "n1", 400, 375),
            local_mirror("p7", "n1", 400, 375),
            critical("p8", "n1", 400, 375),
            rs("p9", "n2", 400, 3000),
        ],
        [node_metrics(n, 4000, 3000) for n in ("n1", "n2", "n3")],
        [
            *(pod_metrics(f"p{i}", 400, 375) for i in range(1, 9)),
            pod_metrics("p9", 400, 3000),
        ],
        0,
        0,
        thresholds={"cpu": 5.0, "pods": 5.0},
        target_thresholds={"cpu": 5.0, "pods": 5.0},
        use_deviation_thresholds=True,
    ),
}


def run_low(case: LowCase, metrics: bool) -> PodEvictor:
    """Upstream's testFnc: with metrics, one collection of the NodeMetrics (the first
    sample is taken as it is) and the PodMetrics, ``metricsUtilization`` on
    KubernetesMetrics; the handle's DefaultEvictor has ``NodeFit: true``."""
    view: dict[str, Any] = {}
    utilization = None
    if metrics:
        collector = NodeUsageCollector()
        assert collector.collect(case.node_metrics) == []
        view = {
            "node_usage": collector.usage(),
            "pod_metrics": {
                (m.metadata.namespace or "default", m.metadata.name): m for m in case.pod_metrics
            },
        }
        utilization = MetricsUtilization(source="KubernetesMetrics")
    args = LowNodeUtilizationArgs(
        thresholds=case.thresholds,
        target_thresholds=case.target_thresholds,
        use_deviation_thresholds=case.use_deviation_thresholds,
        eviction_limits=case.eviction_limits,
        evictable_namespaces=case.evictable_namespaces,
        metrics_utilization=utilization,
    )
    return run_plugin(
        new_low,
        args,
        case.nodes,
        case.pods,
        evictor_args=DefaultEvictorArgs(node_fit=True),
        balance=True,
        **view,
    )


@pytest.mark.parametrize("metrics", [False, True], ids=["requests", "with metrics enabled"])
@pytest.mark.parametrize("case", LOW.values(), ids=LOW.keys())
def test_low_node_utilization(case: LowCase, metrics: bool) -> None:
    evictor = run_low(case, metrics)
    assert evictor.total_evicted == (case.evicted_with_metrics if metrics else case.evicted)
    if case.names:
        assert sorted(evicted_names(evictor)) == sorted(case.names)


# TestLowNodeUtilizationWithTaints: thresholds pods 20 / target pods 70, NodeFit, and
# (as upstream's handle is built) a per-node limit of the number expected.

T1 = build_node("n1", 2000, 3000, 10)
T2 = build_node("n2", 1000, 3000, 10)
T3 = build_node("n3", 1000, 3000, 10)
T3_TAINTED = build_node("n3", 1000, 3000, 10, taints=[KEY_TAINT])
TOLERATES = rs("tolerate_pod", "n1", 200, spec_tolerations=[Toleration(key="key", value="value")])


def n1_pods(count: int) -> list[Pod]:
    return [rs(f"pod_{i}_n1", "n1", 200) for i in range(1, count + 1)]


LOW_TAINTS: dict[str, tuple[list[Node], list[Pod], int]] = {
    "No taints": ([T1, T2, T3], [*n1_pods(8), rs("pod_9_n2", "n2", 200)], 1),
    "No pod tolerates node taint": (
        [T1, T3_TAINTED],
        [*n1_pods(8), rs("pod_9_n3", "n3", 200)],
        0,
    ),
    "Pod which tolerates node taint": (
        [T1, T3_TAINTED],
        [*n1_pods(7), TOLERATES, rs("pod_9_n3", "n3", 200)],
        1,
    ),
    "Pod which tolerates node taint, set maxPodsToEvictTotal(0), should not be expelled": (
        [T1, T3_TAINTED],
        [*n1_pods(7), TOLERATES, rs("pod_9_n3", "n3", 200)],
        0,
    ),
}


@pytest.mark.parametrize(("nodes", "pods", "expected"), LOW_TAINTS.values(), ids=LOW_TAINTS.keys())
def test_low_node_utilization_with_taints(
    nodes: list[Node], pods: list[Pod], expected: int
) -> None:
    evictor = run_plugin(
        new_low,
        LowNodeUtilizationArgs(thresholds={"pods": 20}, target_thresholds={"pods": 70}),
        nodes,
        pods,
        evictor_args=DefaultEvictorArgs(node_fit=True),
        limits=Limits(per_node=expected),
        balance=True,
    )
    assert evictor.total_evicted == expected


# TestHighNodeUtilization: DefaultEvictor with NodeFit.
