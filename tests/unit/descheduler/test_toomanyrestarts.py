"""Upstream's TestRemovePodsHavingTooManyRestarts (removepodshavingtoomanyrestarts/
toomanyrestarts_test.go), case by case: the number of pods evicted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contracts.k8s import Node, Pod, Taint
from contracts.k8s.pod import ContainerStatus, Volume
from services.descheduler.evictions import Limits
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.toomanyrestarts import (
    RemovePodsHavingTooManyRestartsArgs as Args,
)
from services.descheduler.plugins.toomanyrestarts import new
from tests.unit.descheduler.support import DS, NORMAL, build_node, build_pod, with_

LOCAL = [Volume(name="sample", host_path={"path": "somePath"}, empty_dir={"medium": ""})]
MIRROR = {"kubernetes.io/config.mirror": "mirror"}


def restarted(name: str, base: int, apply: Callable[[Pod], Pod] | None) -> Pod:
    """``initPodContainersWithStatusRestartCount``: 5·base restarts in the init
    container, 10·base in each of two containers."""
    pod = build_pod(name, 100, 0, "node1", owners=NORMAL)
    pod = with_(
        pod,
        status_init_container_statuses=[ContainerStatus(restart_count=5 * base)],
        status_container_statuses=[
            ContainerStatus(restart_count=10 * base),
            ContainerStatus(restart_count=10 * base),
        ],
    )
    return apply(pod) if apply else pod


def init_pods(apply: Callable[[Pod], Pod] | None = None) -> list[Pod]:
    """``initPods``: pod-0..pod-9 on node1 with 25·i restarts; pod-6 a DaemonSet pod,
    pod-7 with local storage, pod-8 a mirror pod; CPU consumers on node4 and node5."""
    pods = []
    for i in range(10):
        pod = restarted(f"pod-{i}", i, None)
        if i == 6:
            pod = with_(pod, meta_owner_references=DS)
        elif i == 7:
            pod = with_(pod, spec_volumes=LOCAL)
        elif i == 8:
            pod = with_(pod, meta_annotations=MIRROR)
        pods.append(apply(pod) if apply else pod)
    pods += [
        build_pod("CPU-consumer-1", 150, 100, "node4", owners=NORMAL),
        build_pod("CPU-consumer-2", 150, 100, "node5", owners=NORMAL),
    ]
    return pods


def crashing(pod: Pod) -> Pod:
    statuses = list(pod.status.container_statuses)
    if statuses:
        first = ContainerStatus(
            restart_count=statuses[0].restart_count,
            state={"waiting": {"reason": "CrashLoopBackOff"}},
        )
        statuses[0] = first
    return with_(pod, status_container_statuses=statuses)


def running(pod: Pod) -> Pod:
    return with_(pod, status_phase="Running")


GPU = Taint(key="hardware", value="gpu", effect="NoSchedule")
N1 = [build_node("node1")]
CASES = {
    "All pods have total restarts under threshold, no pod evictions": (
        Args(pod_restart_threshold=10000, including_init_containers=True),
        init_pods(),
        N1,
        0,
        {},
    ),
    "Some pods have total restarts bigger than threshold": (
        Args(pod_restart_threshold=1, including_init_containers=True),
        init_pods(),
        N1,
        6,
        {},
    ),
    "Nine pods have total restarts equals threshold(includingInitContainers=true), 6 pod "
    "evictions": (
        Args(pod_restart_threshold=25, including_init_containers=True),
        init_pods(),
        N1,
        6,
        {},
    ),
    "Nine pods have total restarts equals threshold(includingInitContainers=false), 5 pod "
    "evictions": (Args(pod_restart_threshold=25), init_pods(), N1, 5, {}),
    "All pods have total restarts equals threshold(includingInitContainers=true), 6 pod "
    "evictions": (
        Args(pod_restart_threshold=20, including_init_containers=True),
        init_pods(),
        N1,
        6,
        {},
    ),
    "Nine pods have total restarts equals threshold(includingInitContainers=false), 6 pod "
    "evictions": (Args(pod_restart_threshold=20), init_pods(), N1, 6, {}),
    "Five pods have total restarts bigger than threshold(includingInitContainers=true), but "
    "only 1 pod eviction": (
        Args(pod_restart_threshold=5 * 25 + 1, including_init_containers=True),
        init_pods(),
        N1,
        1,
        {},
    ),
    "Five pods have total restarts bigger than threshold(includingInitContainers=false), but "
    "only 1 pod eviction": (Args(pod_restart_threshold=5 * 20 + 1), init_pods(), N1, 1, {}),
    "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3), 3 pod evictions": (
        Args(pod_restart_threshold=1, including_init_containers=True),
        init_pods(),
        N1,
        3,
        {"limits": Limits(per_node=3)},
    ),
    "All pods have total restarts equals threshold(maxNoOfPodsToEvictPerNamespace=3), 3 pod "
    "evictions": (
        Args(pod_restart_threshold=1, including_init_containers=True),
        init_pods(),
        N1,
        3,
        {"limits": Limits(per_namespace=3)},
    ),
    "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other "
    "node is tainted, 0 pod evictions": (
        Args(pod_restart_threshold=1, including_init_containers=True),
        init_pods(),
        [build_node("node1"), build_node("node2", taints=[GPU])],
        0,
        {"limits": Limits(per_node=3), "node_fit": True},
    ),
    "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other "
    "node is not schedulable, 0 pod evictions": (
        Args(pod_restart_threshold=1, including_init_containers=True),
        init_pods(),
        [build_node("node1"), build_node("node3", unschedulable=True)],
        0,
        {"limits": Limits(per_node=3), "node_fit": True},
    ),
    "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other "
    "node does not have enough CPU, 0 pod evictions": (
        Args(pod_restart_threshold=1, including_init_containers=True),
        init_pods(),
        [build_node("node1"), build_node("node4", 200, 3000, 10)],
        0,
        {"limits": Limits(per_node=3), "node_fit": True},
    ),
    "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other "
    "node has enough CPU, 3 pod evictions": (
        Args(pod_restart_threshold=1, including_init_containers=True),
        init_pods(),
        [build_node("node1"), build_node("node5")],
        3,
        {"limits": Limits(per_node=3), "node_fit": True},
    ),
    "pods are in CrashLoopBackOff with states=CrashLoopBackOff, 3 pod evictions": (
        Args(pod_restart_threshold=1, states=["CrashLoopBackOff"]),
        init_pods(crashing),
        [build_node("node1"), build_node("node5")],
        3,
        {"limits": Limits(per_node=3), "node_fit": True},
    ),
    "pods without CrashLoopBackOff with states=CrashLoopBackOff, 0 pod evictions": (
        Args(pod_restart_threshold=1, states=["CrashLoopBackOff"]),
        init_pods(),
        [build_node("node1"), build_node("node5")],
        0,
        {"limits": Limits(per_node=3), "node_fit": True},
    ),
    "pods running with state=Running, 3 pod evictions": (
        Args(pod_restart_threshold=1, states=["Running"]),
        init_pods(running),
        [build_node("node1"), build_node("node5")],
        3,
        {"limits": Limits(per_node=3), "node_fit": True},
    ),
}


@pytest.mark.parametrize(
    ("args", "pods", "nodes", "evicted", "extra"), CASES.values(), ids=CASES.keys()
)
def test_too_many_restarts(
    args: Args, pods: list[Pod], nodes: list[Node], evicted: int, extra: dict[str, Any]
) -> None:
    from tests.unit.descheduler.support import run_plugin

    evictor = run_plugin(
        new,
        args,
        nodes,
        pods,
        evictor_args=DefaultEvictorArgs(node_fit=extra.get("node_fit", False)),
        limits=extra.get("limits"),
    )
    assert evictor.total_evicted == evicted


def test_most_restarts_first() -> None:
    from tests.unit.descheduler.support import evicted_names, run_plugin

    evictor = run_plugin(
        new, Args(pod_restart_threshold=1), N1, init_pods(), limits=Limits(per_node=2)
    )
    assert evicted_names(evictor) == ["pod-9", "pod-5"]
