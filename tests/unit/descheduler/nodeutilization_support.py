"""What the NodeUtilization tests share: upstream's TestLowNodeUtilization pods and
nodes (p1..p9, n1..n3; each pod ``build_pod(name, 400, 0, node, owners=RS)`` unless
said) and ``test.BuildNodeMetrics`` / ``BuildPodMetrics``."""

from __future__ import annotations

from contracts.k8s import Node, NodeMetrics, ObjectMeta, OwnerReference, Pod, PodMetrics
from contracts.k8s.metrics import ContainerMetrics
from contracts.k8s.pod import Volume
from tests.unit.descheduler.support import DS, NORMAL, build_node, build_pod

RS = [OwnerReference(kind="ReplicaSet", api_version="v1", name="rs", uid="rs")]
LOCAL = [Volume(name="s", host_path={"path": "p"}, empty_dir={})]


def unevictable(node: str = "n1") -> list[Pod]:
    """p6 (DaemonSet), p7 (local storage, mirror), p8 (critical, kube-system)."""
    return [
        build_pod("p6", 400, 0, node, owners=DS),
        build_pod(
            "p7",
            400,
            0,
            node,
            owners=NORMAL,
            spec_volumes=LOCAL,
            meta_annotations={"kubernetes.io/config.mirror": "m"},
        ),
        build_pod(
            "p8", 400, 0, node, owners=[], meta_namespace="kube-system", spec_priority=2_000_000_000
        ),
    ]


def nodes(*, n2_unschedulable: bool = False, n3: bool = True) -> list[Node]:
    out = [
        build_node("n1", 4000, 3000, 9),
        build_node("n2", 4000, 3000, 10, unschedulable=n2_unschedulable),
    ]
    if n3:
        out.append(build_node("n3", 4000, 3000, 10, unschedulable=True))
    return out


FIVE = [build_pod(f"p{i}", 400, 0, "n1", owners=RS) for i in range(1, 6)]
P9 = build_pod("p9", 400, 0, "n2", owners=RS)
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
