"""The rest of upstream's nodeutilization tables (lownodeutilization_test.go,
highnodeutilization_test.go), case by case with upstream's names and expectations:

- TestLowNodeUtilization: the cases test_nodeutilization.py and
  test_metrics_utilization.py do not port, each run twice as upstream runs it, on the
  requests (``expectedPodsEvicted``) and on the collected NodeMetrics/PodMetrics
  (``expectedPodsWithMetricsEvicted``);
- TestLowNodeUtilizationWithTaints, TestHighNodeUtilization,
  TestHighNodeUtilizationWithTaints: every case.

As upstream's handles do, the evictor is DefaultEvictor with ``NodeFit: true`` except
in TestHighNodeUtilizationWithTaints (``DefaultEvictorArgs{}``). Where upstream lists
``evictedPods``, its fake client fails any other eviction: the pods evicted are
exactly those."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from contracts.k8s import (
    Affinity,
    Node,
    NodeAffinity,
    NodeMetrics,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerReference,
    Pod,
    PodMetrics,
    Taint,
    Toleration,
)
from contracts.k8s.pod import Volume
from services.descheduler.evictions import Limits, PodEvictor
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.nodeutilization import (
    EvictionLimits,
    HighNodeUtilizationArgs,
    LowNodeUtilizationArgs,
    MetricsUtilization,
    new_high,
    new_low,
)
from services.descheduler.podutil import Namespaces
from services.descheduler.usage import NodeUsageCollector
from tests.unit.descheduler.support import (
    RS_OWNER,
    build_node,
    build_pod,
    evicted_names,
    run_plugin,
    with_,
)
from tests.unit.descheduler.test_metrics_utilization import node_metrics, pod_metrics

LOW_PRIORITY = 0
HIGH_PRIORITY = 10000
SYSTEM_CRITICAL = 2 * 1_000_000_000
"""``utils.SystemCriticalPriority``."""
EXT = "example.com/foo"
"""``extendedResource``."""
NORMAL = [OwnerReference(kind="Pod", api_version="v1", name="")]
"""``test.GetNormalPodOwnerRefList``."""
DS = [OwnerReference(kind="DaemonSet", api_version="v1", name="")]
"""``test.GetDaemonSetOwnerRefList``."""
LOCAL = [Volume(name="sample", host_path={"path": "somePath"}, empty_dir={"sizeLimit": "10"})]
"""``test.SetHostPathEmptyDirVolumeSource``."""
MIRROR = {
    "kubernetes.io/created-by": (
        '{"kind":"SerializedReference","apiVersion":"v1","reference":{"kind":"Pod"}}'
    ),
    "kubernetes.io/config.source": "api",
    "kubernetes.io/config.mirror": "mirror",
}
"""``test.GetMirrorPodAnnotation``."""


# ``test.BuildTestPod(name, cpu, memory, node, apply)`` with upstream's usual applies.


def rs(name: str, node: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Pod:
    """``test.SetRSOwnerRef``."""
    return build_pod(name, cpu, memory, node, owners=RS_OWNER, **changes)


def ds(name: str, node: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Pod:
    """``test.SetDSOwnerRef``."""
    return build_pod(name, cpu, memory, node, owners=DS, **changes)


def bare(name: str, node: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Pod:
    """No owner (only the apply's changes)."""
    return build_pod(name, cpu, memory, node, owners=[], **changes)


def local_mirror(name: str, node: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Pod:
    """A pod with local storage, a mirror pod (``withLocalStorage``)."""
    return build_pod(
        name,
        cpu,
        memory,
        node,
        owners=NORMAL,
        spec_volumes=LOCAL,
        meta_annotations=dict(MIRROR),
        **changes,
    )


def critical(name: str, node: str, cpu: int = 400, memory: int = 0, *, owned: bool = True) -> Pod:
    """A critical pod in kube-system (``withCriticalPod``; ``owned``: with
    ``SetNormalOwnerRef``, which some cases leave out)."""
    return build_pod(
        name,
        cpu,
        memory,
        node,
        owners=NORMAL if owned else [],
        meta_namespace="kube-system",
        spec_priority=SYSTEM_CRITICAL,
    )


def best_effort(pod: Pod) -> Pod:
    """``test.MakeBestEffortPod``: the container without requests nor limits."""
    (container,) = pod.spec.containers
    resources = msgspec.structs.replace(container.resources, requests={}, limits={})
    return with_(pod, spec_containers=[msgspec.structs.replace(container, resources=resources)])


def extended(pod: Pod, amount: int) -> Pod:
    """``test.SetPodExtendedResourceRequest(pod, extendedResource, amount)``."""
    (container,) = pod.spec.containers
    requests = {**container.resources.requests, EXT: str(amount)}
    resources = msgspec.structs.replace(container.resources, requests=requests)
    return with_(pod, spec_containers=[msgspec.structs.replace(container, resources=resources)])


def west_affinity() -> Affinity:
    """Required node affinity ``datacenter In [west]``."""
    requirement = NodeSelectorRequirement(key="datacenter", operator="In", values=["west"])
    return Affinity(
        node_affinity=NodeAffinity(
            required_during_scheduling_ignored_during_execution=NodeSelector(
                node_selector_terms=[NodeSelectorTerm(match_expressions=[requirement])]
            )
        )
    )


def node(
    name: str,
    millicpu: int = 4000,
    memory: int = 3000,
    pods: int = 10,
    *,
    ext: int | None = None,
    **kwargs: Any,
) -> Node:
    """``test.BuildTestNode``; ``ext``: ``test.SetNodeExtendedResource``."""
    built = build_node(name, millicpu, memory, pods, **kwargs)
    if ext is None:
        return built
    status = msgspec.structs.replace(
        built.status,
        capacity={**built.status.capacity, EXT: str(ext)},
        allocatable={**built.status.allocatable, EXT: str(ext)},
    )
    return msgspec.structs.replace(built, status=status)


def three_nodes() -> list[Node]:
    """n1 (9 pods), n2, n3 unschedulable: 4000m, 3000."""
    return [node("n1", pods=9), node("n2"), node("n3", unschedulable=True)]


def five_metrics(millicpu: int = 401) -> list[PodMetrics]:
    return [pod_metrics(f"p{i}", millicpu) for i in range(1, 6)]


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
        [node("n1", pods=9), node("n2", labels={"datacenter": "east"})],
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
        [node("n1"), node("n2"), node("n3", unschedulable=True)],
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

T1 = node("n1", 2000, 3000, 10)
T2 = node("n2", 1000, 3000, 10)
T3 = node("n3", 1000, 3000, 10)
KEY_TAINT = Taint(key="key", value="value", effect="NoSchedule")
T3_TAINTED = node("n3", 1000, 3000, 10, taints=[KEY_TAINT])
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


@dataclass
class HighCase:
    thresholds: dict[str, float]
    nodes: list[Node]
    pods: list[Pod]
    evicted: int
    names: list[str] = field(default_factory=list)
    eviction_modes: list[str] = field(default_factory=list)


def unschedulable_n3(millicpu: int = 4000) -> list[Node]:
    return [
        node("n1", millicpu),
        node("n2", millicpu),
        node("n3", millicpu, unschedulable=True),
    ]


NOT_ENOUGH_MEMORY = HighCase(
    {"cpu": 30, "pods": 30},
    [node("n1", 4000, 200, 9), node("n2", 4000, 3000, 10)],
    [
        rs("p1", "n1", 400, 50),
        rs("p2", "n1", 400, 50),
        rs("p3", "n1", 400, 50),
        ds("p4", "n1", 400, 50),
        rs("p5", "n2", 400, 100),
    ],
    0,
)
HIGH: list[tuple[str, HighCase]] = [
    (
        "no node below threshold usage",
        HighCase(
            {"cpu": 20, "pods": 20},
            [node("n1"), node("n2"), node("n3")],
            [rs(f"p{i}", f"n{(i - 1) // 3 + 1}") for i in range(1, 10)],
            0,
        ),
    ),
    (
        "no evictable pods",
        HighCase(
            {"cpu": 40, "pods": 40},
            [node("n1", pods=9), node("n2"), node("n3")],
            [
                local_mirror("p1", "n1"),
                critical("p2", "n1"),
                ds("p3", "n2"),
                ds("p4", "n2"),
                *(rs(f"p{i}", "n3") for i in range(5, 9)),
            ],
            0,
        ),
    ),
    (
        "no node to schedule evicted pods",
        HighCase(
            {"cpu": 20, "pods": 20},
            unschedulable_n3(),
            [rs("p1", "n1"), rs("p2", "n2"), rs("p3", "n3"), rs("p4", "n3"), rs("p5", "n3")],
            0,
        ),
    ),
    (
        "without priorities",
        HighCase(
            {"cpu": 30, "pods": 30},
            unschedulable_n3(),
            [
                rs("p1", "n1"),
                critical("p2", "n1"),
                *(rs(f"p{i}", "n2") for i in range(3, 7)),
                rs("p7", "n3"),
            ],
            2,
            ["p1", "p7"],
        ),
    ),
    (
        "without priorities stop when resource capacity is depleted",
        HighCase(
            {"cpu": 30, "pods": 30},
            unschedulable_n3(2000),
            [rs("p1", "n1"), *(rs(f"p{i}", "n2") for i in range(2, 6)), rs("p6", "n3")],
            1,
        ),
    ),
    (
        "with priorities",
        HighCase(
            {"cpu": 30},
            [node("n1", 4000), node("n2", 2000), node("n3", 2000, unschedulable=True)],
            [
                rs("p1", "n1", spec_priority=LOW_PRIORITY),
                rs("p2", "n1", spec_priority=HIGH_PRIORITY),
                *(rs(f"p{i}", "n2") for i in range(5, 9)),
                ds("p9", "n3"),
            ],
            1,
            ["p1"],
        ),
    ),
    (
        "without priorities evicting best-effort pods only",
        HighCase(
            {"cpu": 30},
            [node("n1", 3000), node("n2", 3000, pods=5), node("n3", 3000, unschedulable=True)],
            [
                best_effort(rs("p1", "n1", 0, 0)),
                rs("p2", "n1"),
                *(rs(f"p{i}", "n2") for i in range(3, 7)),
            ],
            1,
            ["p1"],
        ),
    ),
    (
        "with extended resource",
        HighCase(
            {"cpu": 20, EXT: 40},
            [node("n1", ext=8), node("n2", ext=8), node("n3", unschedulable=True)],
            [
                extended(rs("p1", "n1", 100), 1),
                extended(rs("p2", "n1", 100), 1),
                *(extended(rs(f"p{i}", "n2", 500), 1) for i in range(3, 7)),
            ],
            2,
            ["p1", "p2"],
        ),
    ),
    (
        "with extended resource in some of nodes",
        HighCase(
            {"cpu": 40, EXT: 40},
            [node("n1", ext=8), node("n2"), node("n3", unschedulable=True)],
            [
                extended(rs("p1", "n1", 100), 1),
                extended(rs("p2", "n1", 100), 1),
                *(rs(f"p{i}", "n2", 500) for i in range(3, 7)),
            ],
            0,
        ),
    ),
    (
        "Other node match pod node selector",
        HighCase(
            {"cpu": 30, "pods": 30},
            [node("n1", pods=9, labels={"datacenter": "west"}), node("n2")],
            [
                rs("p1", "n1"),
                rs("p2", "n1"),
                rs("p3", "n1"),
                ds("p4", "n1"),
                rs("p5", "n2", spec_node_selector={"datacenter": "west"}),
            ],
            1,
        ),
    ),
    (
        "Other node does not match pod node selector",
        HighCase(
            {"cpu": 30, "pods": 30},
            [node("n1", pods=9), node("n2")],
            [
                rs("p1", "n1"),
                rs("p2", "n1"),
                rs("p3", "n1"),
                ds("p4", "n1"),
                rs("p5", "n2", spec_node_selector={"datacenter": "west"}),
            ],
            0,
        ),
    ),
    # Upstream's table has this case twice, identical.
    ("Other node does not have enough Memory", NOT_ENOUGH_MEMORY),
    ("Other node does not have enough Memory (2)", NOT_ENOUGH_MEMORY),
    (
        "with extended resource threshold and no extended resource pods",
        HighCase(
            {EXT: 40},
            [node("n1", ext=10), node("n2", ext=10), node("n3", ext=10)],
            [
                extended(rs("p1", "n1", 100), 3),
                extended(rs("p2", "n1", 100), 3),
                *(rs(f"p{i}", "n2", 500) for i in range(3, 7)),
            ],
            0,
            eviction_modes=["OnlyThresholdingResources"],
        ),
    ),
]


@pytest.mark.parametrize("case", [c for _, c in HIGH], ids=[n for n, _ in HIGH])
def test_high_node_utilization(case: HighCase) -> None:
    args = HighNodeUtilizationArgs(thresholds=case.thresholds, eviction_modes=case.eviction_modes)
    evictor = run_plugin(
        new_high,
        args,
        case.nodes,
        case.pods,
        evictor_args=DefaultEvictorArgs(node_fit=True),
        balance=True,
    )
    assert evictor.total_evicted == case.evicted
    if case.names:
        assert sorted(evicted_names(evictor)) == sorted(case.names)


# TestHighNodeUtilizationWithTaints: thresholds cpu 40, DefaultEvictorArgs{} (no
# NodeFit), a per-node limit of the number expected.

H1 = node("n1", 1000, 3000, 10)
H2 = node("n2", 1000, 3000, 10)
H3 = node("n3", 1000, 3000, 10)
H3_TAINTED = node("n3", 1000, 3000, 10, taints=[KEY_TAINT])
H_TOLERATES = rs("tolerate_pod", "n1", 200, spec_tolerations=[Toleration(key="key", value="value")])
HIGH_TAINTS: dict[str, tuple[list[Node], list[Pod], int]] = {
    "No taints": (
        [H1, H2, H3],
        [*(rs(f"pod_{i}_n1", "n1", 200) for i in range(1, 4)), rs("pod_4_n2", "n2", 200)],
        1,
    ),
    "No pod tolerates node taint": (
        [H1, H3_TAINTED],
        [rs("pod_1_n1", "n1", 200), rs("pod_2_n3", "n3", 200)],
        0,
    ),
    "Pod which tolerates node taint": (
        [H1, H3_TAINTED],
        [rs("pod_1_n1", "n1", 100), H_TOLERATES, rs("pod_9_n3", "n3", 500)],
        1,
    ),
}


@pytest.mark.parametrize(
    ("nodes", "pods", "expected"), HIGH_TAINTS.values(), ids=HIGH_TAINTS.keys()
)
def test_high_node_utilization_with_taints(
    nodes: Sequence[Node], pods: list[Pod], expected: int
) -> None:
    evictor = run_plugin(
        new_high,
        HighNodeUtilizationArgs(thresholds={"cpu": 40}),
        nodes,
        pods,
        evictor_args=DefaultEvictorArgs(),
        limits=Limits(per_node=expected),
        balance=True,
    )
    assert evictor.total_evicted == expected
