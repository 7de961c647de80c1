"""LowNodeUtilization with ``metricsUtilization``: upstream's TestLowNodeUtilization
cases run twice, on requests and on the NodeMetrics/PodMetrics a collector read
(``expectedPodsEvicted`` / ``expectedPodsWithMetricsEvicted``); the collector's
smoothing; the usage client's errors."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.k8s import NodeMetrics, ObjectMeta, OwnerReference, Pod, PodMetrics
from contracts.k8s.base import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from contracts.k8s.pod import Affinity, NodeAffinity
from services.descheduler.api import ClusterView
from services.descheduler.evictions import PodEvictor
from services.descheduler.nodefit import SchedulerFit
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.nodeutilization import (
    EvictionLimits,
    LowNodeUtilizationArgs,
    MetricsUtilization,
    new_low,
)
from services.descheduler.profile import PluginHandle, ProfileEvictor
from services.descheduler.usage import NodeUsageCollector, weighted_average
from tests.unit.descheduler.nodeutilization_support import (
    FIVE,
    NORMAL,
    P9,
    RS,
    STATIC,
    node_metrics,
    nodes,
    pod_metrics,
    unevictable,
)
from tests.unit.descheduler.support import build_node, build_pod, run_plugin, with_


def west_only(p: Pod) -> Pod:
    term = NodeSelectorTerm(
        match_expressions=[
            NodeSelectorRequirement(key="datacenter", operator="In", values=["west"])
        ]
    )
    affinity = Affinity(
        node_affinity=NodeAffinity(
            required_during_scheduling_ignored_during_execution=NodeSelector(
                node_selector_terms=[term]
            )
        )
    )
    return with_(p, meta_owner_references=NORMAL, spec_affinity=affinity)


STANDARD_NODES = [node_metrics("n1", 3201), node_metrics("n2", 401), node_metrics("n3", 11)]
FIVE_METRICS = [pod_metrics(f"p{i}", 401) for i in range(1, 6)]

CASES: dict[str, tuple[dict[str, Any], list[Any], list[Pod], list[Any], list[Any], int, int]] = {
    "without priorities": (
        STATIC,
        nodes(),
        FIVE + unevictable() + [P9],
        STANDARD_NODES,
        FIVE_METRICS,
        4,
        4,
    ),
    "no evictable pods": (
        STATIC,
        nodes(),
        [build_pod(f"p{i}", 400, 0, "n1", owners=[], meta_owner_references=[]) for i in range(1, 5)]
        + unevictable()
        + [P9],
        STANDARD_NODES,
        [pod_metrics(f"p{i}", 401) for i in range(1, 5)],
        0,
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
        STANDARD_NODES,
        FIVE_METRICS,
        2,
        2,
    ),
    "without priorities with node eviction limit": (
        {**STATIC, "eviction_limits": EvictionLimits(node=2)},
        nodes(),
        FIVE + unevictable() + [P9],
        STANDARD_NODES,
        FIVE_METRICS,
        2,
        2,
    ),
    "without priorities, but only other node is unschedulable": (
        STATIC,
        nodes(n2_unschedulable=True, n3=False),
        FIVE + unevictable(),
        [node_metrics("n1", 3201), node_metrics("n2", 401)],
        FIVE_METRICS,
        0,
        0,
    ),
    "without priorities different evictions for requested and actual resources": (
        STATIC,
        [
            build_node("n1", 4000, 3000, 9),
            build_node("n2", 4000, 3000, 10, labels={"datacenter": "east"}),
        ],
        [build_pod(f"p{i}", 400, 0, "n1", owners=RS) for i in range(1, 4)]
        + [
            west_only(build_pod("p4", 400, 0, "n1", owners=RS)),
            west_only(build_pod("p5", 400, 0, "n1", owners=RS)),
        ]
        + unevictable()
        + [with_(build_pod("p9", 400, 0, "n2", owners=RS), spec_containers=[])],
        [node_metrics("n1", 3201), node_metrics("n2", 401)],
        [pod_metrics(f"p{i}", 801) for i in range(1, 4)],
        3,
        2,
    ),
}


@pytest.mark.parametrize("metrics", [False, True], ids=["requests", "metrics"])
@pytest.mark.parametrize(
    ("args", "cluster", "pods", "nodes_used", "pods_used", "evicted", "evicted_metrics"),
    CASES.values(),
    ids=CASES.keys(),
)
def test_low_node_utilization_with_metrics(
    metrics: bool,
    args: dict[str, Any],
    cluster: list[Any],
    pods: list[Pod],
    nodes_used: list[NodeMetrics],
    pods_used: list[PodMetrics],
    evicted: int,
    evicted_metrics: int,
) -> None:
    collector = NodeUsageCollector()
    collector.collect(nodes_used)
    extra: dict[str, Any] = {}
    if metrics:
        args = {**args, "metrics_utilization": MetricsUtilization(source="KubernetesMetrics")}
        extra = {
            "node_usage": collector.usage(),
            "pod_metrics": {("default", m.metadata.name): m for m in pods_used},
        }
    evictor = run_plugin(
        new_low,
        LowNodeUtilizationArgs(**args),
        cluster,
        pods,
        balance=True,
        evictor_args=DefaultEvictorArgs(node_fit=True),
        **extra,
    )
    assert evictor.total_evicted == (evicted_metrics if metrics else evicted)


def test_metrics_server_without_a_collector_is_an_error() -> None:
    args = LowNodeUtilizationArgs(
        **STATIC, metrics_utilization=MetricsUtilization(metrics_server=True)
    )
    cluster = ClusterView(nodes(), FIVE, 0.0)
    handle = PluginHandle(ProfileEvictor("p", PodEvictor()), cluster, SchedulerFit(cluster))
    plugin = new_low(args, handle)
    assert plugin.balance(nodes()) == (
        "error initializing usage client: metrics client not initialized"
    )


@pytest.mark.parametrize(
    ("usage", "resources", "message"),
    [
        ({"n1": {"cpu": 1, "memory": 1}}, ("cpu",),
         'error getting node usage: unable to find node "n2" in the collected metrics'),
        ({n: {"cpu": 1, "memory": 1} for n in ("n1", "n2", "n3")}, ("ephemeral-storage",),
         'error getting node usage: unable to find "ephemeral-storage" resource for '
         'collected "n1" node metric'),
    ],
)  # fmt: skip
def test_usage_client_errors(
    usage: dict[str, dict[str, int]], resources: tuple[str, ...], message: str
) -> None:
    thresholds = dict.fromkeys(resources, 10.0)
    args = LowNodeUtilizationArgs(
        thresholds=thresholds,
        target_thresholds=dict.fromkeys(resources, 50.0),
        metrics_utilization=MetricsUtilization(source="KubernetesMetrics"),
    )
    cluster = ClusterView(nodes(), FIVE, 0.0, node_usage=usage)
    handle = PluginHandle(ProfileEvictor("p", PodEvictor()), cluster, SchedulerFit(cluster))
    assert new_low(args, handle).balance(nodes()) == message


@pytest.mark.parametrize(
    ("previous", "sample", "expected"),
    [(1000, 1000, 1000), (1000, 0, 900), (0, 1000, 100), (5, 10, 6), (15, 10, 15), (1, 0, 1)],
)
def test_weighted_average(previous: int, sample: int, expected: int) -> None:
    """``math.Round(0.9*prev + 0.1*value)``, halves away from zero (5.5 → 6, 14.5 → 15)."""
    assert weighted_average(previous, sample) == expected


def test_collector_smooths_later_samples_and_keeps_cpu_and_memory_only() -> None:
    collector = NodeUsageCollector()
    assert not collector.synced
    collector.collect([node_metrics("n1", 2000, 1000)])
    assert collector.usage() == {"n1": {"cpu": 2000, "memory": 1000}}
    collector.collect([node_metrics("n1", 1000, 0)])
    assert collector.usage() == {"n1": {"cpu": 1900, "memory": 900}}
    sample = NodeMetrics(metadata=ObjectMeta(name="n2"), usage={"cpu": "1", "pods": "3"})
    collector.collect([sample])
    assert collector.usage()["n2"] == {"cpu": 1000, "memory": 0}
    assert collector.synced


def test_collector_keeps_the_previous_value_of_an_unreadable_sample() -> None:
    collector = NodeUsageCollector()
    collector.collect([node_metrics("n1", 2000)])
    bad = NodeMetrics(metadata=ObjectMeta(name="n1"), usage={"cpu": "two"})
    errors = collector.collect([bad])
    assert collector.usage()["n1"]["cpu"] == 2000
    assert len(errors) == 1 and errors[0].startswith("NodeMetrics n1: usage.cpu")


EXT = "example.com/foo"


def ext_pod(
    name: str, node: str, amount: int, owners: list[OwnerReference] = RS, **changes: Any
) -> Pod:
    """``BuildTestPod(name, 0, 0, node)`` + ``SetPodExtendedResourceRequest``."""
    base = build_pod(name, 400, 0, node, owners=owners, **changes)
    container = base.spec.containers[0]
    requests = {"cpu": "0m", "memory": "0", EXT: str(amount)}
    resources = msgspec.structs.replace(container.resources, requests=requests)
    return with_(base, spec_containers=[msgspec.structs.replace(container, resources=resources)])


def ext_node(name: str, pods: int, amount: int | None, **kwargs: Any) -> Any:
    node = build_node(name, 4000, 3000, pods, **kwargs)
    if amount is None:
        return node
    status = msgspec.structs.replace(
        node.status, allocatable={**node.status.allocatable, EXT: str(amount)}
    )
    return msgspec.structs.replace(node, status=status)


EXT_THRESHOLDS = {"thresholds": {"pods": 30, EXT: 30}, "target_thresholds": {"pods": 50, EXT: 50}}
N3 = ext_node("n3", 10, None, unschedulable=True)

EXTENDED: dict[str, tuple[dict[str, Any], list[Any], list[Pod], int, int]] = {
    # 4 pods may go by pods, only 3 before n2's extended resource is used up; with
    # metrics the extended resource is not collected: an error, nothing evicted.
    "with extended resource": (
        EXT_THRESHOLDS,
        [ext_node("n1", 9, 8), ext_node("n2", 10, 8), N3],
        [ext_pod(f"p{i}", "n1", 1) for i in range(1, 6)]
        + [
            ext_pod("p6", "n1", 1, owners=NORMAL),
            ext_pod(
                "p7",
                "n1",
                1,
                owners=NORMAL,
                spec_volumes=unevictable()[1].spec.volumes,
                meta_annotations={"kubernetes.io/config.mirror": "m"},
            ),
            ext_pod(
                "p8",
                "n1",
                1,
                owners=NORMAL,
                meta_namespace="kube-system",
                spec_priority=2_000_000_000,
            ),
            ext_pod("p9", "n2", 1),
        ],
        3,
        0,
    ),
    "with extended resource in some of nodes": (
        EXT_THRESHOLDS,
        [ext_node("n1", 9, 8), ext_node("n2", 10, None), N3],
        [ext_pod("p1", "n1", 1), build_pod("p9", 400, 0, "n2", owners=RS)],
        0,
        0,
    ),
    "with extended resource in some of nodes with deviation": (
        {
            "thresholds": {"pods": 5, EXT: 10},
            "target_thresholds": {"pods": 5, EXT: 10},
            "use_deviation_thresholds": True,
        },
        [ext_node("n1", 10, 8), ext_node("n2", 10, 8), N3],
        [
            ext_pod("p1", "n1", 1),
            ext_pod("p2", "n2", 7),
            ext_pod("p3", "n2", 0),
            ext_pod("p8", "n3", 0),
            ext_pod("p9", "n3", 0),
        ],
        1,
        0,
    ),
    "without priorities, but only other node doesn't match pod node selector for p4 and p5": (
        STATIC,
        [
            build_node("n1", 4000, 3000, 9),
            build_node("n2", 4000, 3000, 10, labels={"datacenter": "east"}),
        ],
        [build_pod(f"p{i}", 400, 0, "n1", owners=RS) for i in range(1, 4)]
        + [
            with_(
                build_pod(n, 400, 0, "n1", owners=RS),
                meta_owner_references=NORMAL,
                spec_node_selector={"datacenter": "west"},
            )
            for n in ("p4", "p5")
        ]
        + unevictable(),
        3,
        3,
    ),
}


@pytest.mark.parametrize("metrics", [False, True], ids=["requests", "metrics"])
@pytest.mark.parametrize(
    ("args", "cluster", "pods", "evicted", "evicted_metrics"),
    EXTENDED.values(),
    ids=EXTENDED.keys(),
)
def test_extended_resources_and_node_selectors(
    metrics: bool,
    args: dict[str, Any],
    cluster: list[Any],
    pods: list[Pod],
    evicted: int,
    evicted_metrics: int,
) -> None:
    """The rest of upstream's table; every case has the same NodeMetrics (n1 3201m,
    n2 401m, n3 11m) and PodMetrics (p1..p5 at 401m)."""
    names = {n.metadata.name for n in cluster}
    collector = NodeUsageCollector()
    collector.collect(
        [m for m in (node_metrics("n1", 3201), node_metrics("n2", 401), node_metrics("n3", 11))
         if m.metadata.name in names]
    )  # fmt: skip
    extra: dict[str, Any] = {}
    if metrics:
        args = {**args, "metrics_utilization": MetricsUtilization(source="KubernetesMetrics")}
        extra = {
            "node_usage": collector.usage(),
            "pod_metrics": {("default", f"p{i}"): pod_metrics(f"p{i}", 401) for i in range(1, 6)},
        }
    evictor = run_plugin(
        new_low,
        LowNodeUtilizationArgs(**args),
        cluster,
        pods,
        balance=True,
        evictor_args=DefaultEvictorArgs(node_fit=True),
        **extra,
    )
    assert evictor.total_evicted == (evicted_metrics if metrics else evicted)
