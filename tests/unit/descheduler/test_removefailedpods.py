"""Upstream's TestRemoveFailedPods (removefailedpods/failedpods_test.go), case by case:
the number of pods evicted."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import OwnerReference, Pod
from contracts.k8s.pod import ContainerStatus
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.removefailedpods import RemoveFailedPodsArgs, new
from tests.unit.descheduler.support import NOW, build_node, build_pod, run_plugin, with_

ONE_HOUR = 3600


def args(
    init: bool = False,
    reasons: list[str] | None = None,
    codes: list[int] | None = None,
    exclude: list[str] | None = None,
    min_age: int | None = None,
) -> RemoveFailedPodsArgs:
    """``createRemoveFailedPodsArgs`` (not defaulted: upstream's New gets them so)."""
    return RemoveFailedPodsArgs(
        including_init_containers=init,
        reasons=reasons or [],
        exit_codes=codes or [],
        exclude_owner_kinds=exclude or [],
        min_pod_lifetime_seconds=min_age,
    )


def terminated(reason: str = "", code: int = 0) -> dict[str, Any]:
    return {"terminated": {"reason": reason, "exitCode": code}}


def waiting(reason: str) -> dict[str, Any]:
    return {"waiting": {"reason": reason}}


def failed(
    name: str,
    node: str = "node1",
    *,
    init: dict[str, Any] | None = None,
    container: dict[str, Any] | None = None,
    reason: str = "",
    phase: str | None = None,
    terminating: bool = False,
    owner: str = "ReplicaSet",
) -> Pod:
    """``buildTestPod(name, node, newPodStatus(reason, phase, init, container))``."""
    pod = build_pod(
        name, 1, 1, node, owners=[OwnerReference(kind=owner, api_version="v1", name="o")]
    )
    statuses: dict[str, Any] = {"status_reason": reason or None, "status_phase": phase}
    if init is not None:
        statuses["status_init_container_statuses"] = [ContainerStatus(state=init)]
        statuses["status_phase"] = "Failed"
    if container is not None:
        statuses["status_container_statuses"] = [ContainerStatus(state=container)]
        statuses["status_phase"] = "Failed"
    if terminating:
        statuses["meta_deletion_timestamp"] = "1970-01-01T00:00:00Z"
    return with_(pod, **statuses)


NODE1 = [build_node("node1", 2000, 3000, 10)]
CASES = {
    "default empty args, 0 failures, 0 evictions": (RemoveFailedPodsArgs(), NODE1, [], 0, False),
    "0 failures, 0 evictions": (args(), NODE1, [], 0, False),
    "1 container terminated with reason NodeAffinity, 1 eviction": (
        args(),
        NODE1,
        [failed("p1", container=terminated("NodeAffinity"))],
        1,
        False,
    ),
    "1 container terminated with exitCode 1, 1 eviction": (
        args(codes=[1]),
        NODE1,
        [failed("p1", container=terminated(code=1))],
        1,
        False,
    ),
    "1 container terminated with exitCode 1, reason NodeAffinity, 1 eviction": (
        args(codes=[1]),
        NODE1,
        [failed("p1", container=terminated("NodeAffinity", 1))],
        1,
        False,
    ),
    "1 container terminated with exitCode 1, expected exitCode 2, 0 eviction": (
        args(codes=[2]),
        NODE1,
        [failed("p1", container=terminated(code=1))],
        0,
        False,
    ),
    "2 containers terminated with exitCode 1 and 2 respectively, 2 evictions": (
        args(codes=[1, 2, 3]),
        NODE1,
        [failed("p1", container=terminated(code=1)), failed("p2", container=terminated(code=2))],
        2,
        False,
    ),
    "2 containers terminated with exitCode 1 and 2 respectively, expected exitCode 1, 1 eviction": (
        args(codes=[1]),
        NODE1,
        [failed("p1", container=terminated(code=1)), failed("p2", container=terminated(code=2))],
        1,
        False,
    ),
    "1 init container terminated with reason NodeAffinity, 1 eviction": (
        args(init=True),
        NODE1,
        [failed("p1", init=terminated("NodeAffinity"))],
        1,
        False,
    ),
    "1 init container terminated with exitCode 1, 1 eviction": (
        args(init=True, codes=[1]),
        NODE1,
        [failed("p1", container=terminated(code=1))],
        1,
        False,
    ),
    "1 init container terminated with exitCode 2, expected 1, 0 eviction": (
        args(init=True, codes=[1]),
        NODE1,
        [failed("p1", container=terminated(code=2))],
        0,
        False,
    ),
    "1 init container waiting with reason CreateContainerConfigError, 1 eviction": (
        args(init=True),
        NODE1,
        [failed("p1", init=waiting("CreateContainerConfigError"))],
        1,
        False,
    ),
    "2 init container waiting with reason CreateContainerConfigError, 2 nodes, 2 evictions": (
        args(init=True),
        [build_node("node1", 2000, 3000, 10), build_node("node2", 2000, 3000, 10)],
        [
            failed("p1", "node1", init=waiting("CreateContainerConfigError")),
            failed("p2", "node2", init=waiting("CreateContainerConfigError")),
        ],
        2,
        False,
    ),
    "include reason=CreateContainerConfigError, 1 container terminated with reason "
    "CreateContainerConfigError, 1 eviction": (
        args(reasons=["CreateContainerConfigError"]),
        NODE1,
        [failed("p1", container=terminated("CreateContainerConfigError"))],
        1,
        False,
    ),
    "include reason=CreateContainerConfigError+NodeAffinity, 1 container terminated with "
    "reason CreateContainerConfigError, 1 eviction": (
        args(reasons=["CreateContainerConfigError", "NodeAffinity"]),
        NODE1,
        [failed("p1", container=terminated("CreateContainerConfigError"))],
        1,
        False,
    ),
    "include reason=CreateContainerConfigError, 1 container terminated with reason "
    "NodeAffinity, 0 eviction": (
        args(reasons=["CreateContainerConfigError"]),
        NODE1,
        [failed("p1", container=terminated("NodeAffinity"))],
        0,
        False,
    ),
    "include init container=false, 1 init container waiting with reason "
    "CreateContainerConfigError, 0 eviction": (
        args(reasons=["CreateContainerConfigError"]),
        NODE1,
        [failed("p1", init=waiting("CreateContainerConfigError"))],
        0,
        False,
    ),
    "lifetime 1 hour, 1 container terminated with reason NodeAffinity, 0 eviction": (
        args(min_age=ONE_HOUR),
        NODE1,
        [failed("p1", container=terminated("NodeAffinity"))],
        0,
        False,
    ),
    "nodeFit=true, 1 unschedulable node, 1 container terminated with reason NodeAffinity, "
    "0 eviction": (
        args(),
        [
            build_node("node1", 2000, 3000, 10),
            build_node("node2", 2000, 2000, 10, unschedulable=True),
        ],
        [failed("p1", container=terminated("NodeAffinity"))],
        0,
        True,
    ),
    "nodeFit=true, only available node does not have enough resources, 1 container "
    "terminated with reason CreateContainerConfigError, 0 eviction": (
        args(reasons=["CreateContainerConfigError"]),
        [build_node("node1", 2000, 3000, 10), build_node("node2", 0, 0, 10)],
        [failed("p1", container=terminated("CreateContainerConfigError"))],
        0,
        True,
    ),
    "excluded owner kind=ReplicaSet, 1 init container terminated with owner kind=ReplicaSet, "
    "0 eviction": (
        args(init=True, exclude=["ReplicaSet"]),
        NODE1,
        [failed("p1", init=terminated("NodeAffinity"))],
        0,
        False,
    ),
    "excluded owner kind=DaemonSet, 1 init container terminated with owner kind=ReplicaSet, "
    "1 eviction": (
        args(init=True, exclude=["DaemonSet"]),
        NODE1,
        [failed("p1", init=terminated("NodeAffinity"))],
        1,
        False,
    ),
    "excluded owner kind=DaemonSet, 1 init container terminated with owner kind=ReplicaSet, "
    "1 pod in termination; nothing should be moved": (
        args(init=True, exclude=["DaemonSet"]),
        NODE1,
        [failed("p1", init=terminated("NodeAffinity"), terminating=True)],
        0,
        False,
    ),
    "1 container terminated with reason ShutDown, 0 evictions": (
        args(),
        NODE1,
        [failed("p1", reason="Shutdown", phase="Failed")],
        0,
        True,
    ),
    "include reason=Shutdown, 2 containers terminated with reason ShutDown, 2 evictions": (
        args(reasons=["Shutdown"]),
        NODE1,
        [
            failed("p1", reason="Shutdown", phase="Failed"),
            failed("p2", reason="Shutdown", phase="Failed"),
        ],
        2,
        False,
    ),
}


@pytest.mark.parametrize(
    ("args", "nodes", "pods", "evicted", "node_fit"), CASES.values(), ids=CASES.keys()
)
def test_remove_failed_pods(
    args: RemoveFailedPodsArgs, nodes: list[Any], pods: list[Pod], evicted: int, node_fit: bool
) -> None:
    evictor = run_plugin(
        new, args, nodes, pods, evictor_args=DefaultEvictorArgs(node_fit=node_fit), now=NOW
    )
    assert evictor.total_evicted == evicted


def test_the_default_minimum_age_is_an_hour() -> None:
    assert RemoveFailedPodsArgs().defaulted().min_pod_lifetime_seconds == 3600
