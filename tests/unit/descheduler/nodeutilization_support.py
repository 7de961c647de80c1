"""Builders the NodeUtilization tests share: upstream's TestLowNodeUtilization pods and
nodes (p1..p9, n1..n3) and ``test.BuildNodeMetrics`` / ``BuildPodMetrics``."""

from __future__ import annotations

from typing import Any

from contracts.k8s import Node, NodeMetrics, ObjectMeta, OwnerReference, Pod, PodMetrics
from contracts.k8s.metrics import ContainerMetrics
from contracts.k8s.pod import Volume
from tests.unit.descheduler.support import DS, NORMAL, build_node, build_pod, with_

RS = [OwnerReference(kind="ReplicaSet", api_version="v1", name="rs", uid="rs")]
LOCAL = [Volume(name="s", host_path={"path": "p"}, empty_dir={})]


def pod(name: str, node: str, owners: list[OwnerReference] = RS, **changes: Any) -> Pod:
    base = build_pod(name, 400, 0, node, owners=owners)
    return with_(base, **changes) if changes else base


def unevictable(node: str = "n1") -> list[Pod]:
    """p6 (DaemonSet), p7 (local storage, mirror), p8 (critical, kube-system)."""
    return [
        pod("p6", node, DS),
        pod(
            "p7",
            node,
            NORMAL,
            spec_volumes=LOCAL,
            meta_annotations={"kubernetes.io/config.mirror": "m"},
        ),
        pod("p8", node, [], meta_namespace="kube-system", spec_priority=2_000_000_000),
    ]


def nodes(*, n2_unschedulable: bool = False, n3: bool = True) -> list[Node]:
    out = [
        build_node("n1", 4000, 3000, 9),
        build_node("n2", 4000, 3000, 10, unschedulable=n2_unschedulable),
    ]
    if n3:
        out.append(build_node("n3", 4000, 3000, 10, unschedulable=True))
    return out


FIVE = [pod(f"p{i}", "n1") for i in range(1, 6)]
P9 = pod("p9", "n2")
STATIC = {"thresholds": {"cpu": 30, "pods": 30}, "target_thresholds": {"cpu": 50, "pods": 50}}


def node_metrics(name: str, millicpu: int, memory: int = 0) -> NodeMetrics:
    """``test.BuildNodeMetrics``."""
    return NodeMetrics(
        metadata=ObjectMeta(name=name), usage={"cpu": f"{millicpu}m", "memory": str(memory)}
    )


def pod_metrics(name: str, millicpu: int, memory: int = 0) -> PodMetrics:
    """``test.BuildPodMetrics``: one container."""
    return PodMetrics(
        metadata=ObjectMeta(name=name, namespace="default"),
        containers=[
            ContainerMetrics(
                name="container-1", usage={"cpu": f"{millicpu}m", "memory": str(memory)}
            )
        ],
    )
