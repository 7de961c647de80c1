"""Upstream's PodLifeTime tables (podlifetime/pod_lifetime_test.go): eviction limits,
container waiting reasons, init containers, terminating pods, the evictor's args."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import LabelSelector, OwnerReference, Pod
from contracts.k8s.pod import ContainerStatus, PersistentVolumeClaimVolumeSource, Volume
from services.descheduler.evictions import Limits
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.podlifetime import PodLifeTimeArgs as Args
from services.descheduler.plugins.podlifetime import new
from tests.unit.descheduler.support import (
    STAMP,
    build_node,
    build_pod,
    evicted_names,
    run_plugin,
    with_,
)

OLDER = "2009-11-10T23:00:00Z"
NEWER = STAMP
RS = [OwnerReference(kind="ReplicaSet", api_version="v1", name="rs", uid="rs")]


def rs(name: str, created: str, *, pending: bool = False, **changes: Any) -> Pod:
    """``buildTestPodWithRSOwnerRefForNode1`` (``…WithPendingPhase…``)."""
    pod = build_pod(name, 100, 0, "n1", owners=RS, created=created)
    if pending:
        pod = with_(pod, status_phase="Pending")
    return with_(pod, **changes) if changes else pod


def waiting(name: str, reason: str, *, init: bool = False) -> Pod:
    status = [ContainerStatus(state={"waiting": {"reason": reason}})]
    field = "status_init_container_statuses" if init else "status_container_statuses"
    return rs(name, OLDER, **{field: status})


N1 = [build_node("n1", 2000, 3000, 10)]
LIFE = 600
CASES: dict[str, tuple[Args, list[Pod], int, list[str] | None, dict[str, Any]]] = {
    "No pod should be evicted since pod terminating": (
        Args(max_pod_life_time_seconds=LIFE),
        [rs("p1", OLDER, meta_deletion_timestamp=NEWER)],
        0,
        None,
        {},
    ),
    "2 Oldest pods should be evicted when maxPodsToEvictPerNode and maxPodsToEvictPerNamespace "
    "are not set": (
        Args(max_pod_life_time_seconds=LIFE),
        [rs("p1", NEWER), rs("p2", OLDER), rs("p9", OLDER, pending=True)],
        2,
        ["p2", "p9"],
        {},
    ),
    "1 Oldest pod should be evicted when maxPodsToEvictPerNamespace is set to 1": (
        Args(max_pod_life_time_seconds=LIFE),
        [rs("p1", NEWER), rs("p2", OLDER)],
        1,
        ["p2"],
        {"limits": Limits(per_namespace=1)},
    ),
    "1 Oldest pod should be evicted when maxPodsToEvictTotal is set to 1": (
        Args(max_pod_life_time_seconds=LIFE),
        [rs("p1", NEWER), rs("p2", OLDER)],
        1,
        ["p2"],
        {"limits": Limits(per_namespace=2, total=1)},
    ),
    "1 Oldest pod should be evicted when maxPodsToEvictPerNode is set to 1": (
        Args(max_pod_life_time_seconds=LIFE),
        [rs("p1", NEWER), rs("p2", OLDER)],
        1,
        ["p2"],
        {"limits": Limits(per_node=1)},
    ),
    "Two pods, one with ContainerCreating state. 1 should be evicted.": (
        Args(max_pod_life_time_seconds=LIFE, states=["ContainerCreating"]),
        [rs("p9", OLDER, pending=True), waiting("container-creating-stuck", "ContainerCreating")],
        1,
        ["container-creating-stuck"],
        {},
    ),
    "1 pod with container status ImagePullBackOff should be evicted": (
        Args(max_pod_life_time_seconds=LIFE, states=["ImagePullBackOff"]),
        [waiting("p", "ImagePullBackOff")],
        1,
        None,
        {},
    ),
    "1 pod with container status CrashLoopBackOff should be evicted": (
        Args(max_pod_life_time_seconds=LIFE, states=["CrashLoopBackOff"]),
        [waiting("p", "CrashLoopBackOff")],
        1,
        None,
        {},
    ),
    "1 pod with container status CreateContainerConfigError should be evicted": (
        Args(max_pod_life_time_seconds=LIFE, states=["CreateContainerConfigError"]),
        [waiting("p", "CreateContainerConfigError")],
        1,
        None,
        {},
    ),
    "1 pod with container status ErrImagePull should be evicted": (
        Args(max_pod_life_time_seconds=LIFE, states=["ErrImagePull"]),
        [waiting("p", "ErrImagePull")],
        1,
        None,
        {},
    ),
    "1 pod with init container status CreateContainerError should not be evicted without "
    "includingInitContainers": (
        Args(max_pod_life_time_seconds=LIFE, states=["CreateContainerError"]),
        [waiting("p", "CreateContainerError", init=True)],
        0,
        None,
        {},
    ),
    "1 pod with init container status CreateContainerError should be evicted with "
    "includingInitContainers": (
        Args(
            max_pod_life_time_seconds=LIFE,
            states=["CreateContainerError"],
            including_init_containers=True,
        ),
        [waiting("p", "CreateContainerError", init=True)],
        1,
        None,
        {},
    ),
    "Does not evict pvc pods with ignorePvcPods set to true": (
        Args(max_pod_life_time_seconds=LIFE),
        [
            rs(
                "p11",
                OLDER,
                spec_volumes=[
                    Volume(
                        name="pvc",
                        persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name="foo"),
                    )
                ],
            )
        ],
        0,
        None,
        {"evictor": DefaultEvictorArgs(ignore_pvc_pods=True)},
    ),
    "1 pod matching label selector should be evicted": (
        Args(
            max_pod_life_time_seconds=LIFE,
            label_selector=LabelSelector(match_labels={"foo": "bar"}),
        ),
        [
            rs("p12", OLDER, meta_labels={"foo": "bar"}),
            rs("p13", OLDER, meta_labels={"foo": "bar1"}),
        ],
        1,
        ["p12"],
        {},
    ),
}


@pytest.mark.parametrize(
    ("args", "pods", "count", "names", "extra"), CASES.values(), ids=CASES.keys()
)
def test_pod_life_time(
    args: Args, pods: list[Pod], count: int, names: list[str] | None, extra: dict[str, Any]
) -> None:
    evictor = run_plugin(
        new, args, N1, pods, evictor_args=extra.get("evictor"), limits=extra.get("limits")
    )
    assert evictor.total_evicted == count
    if names is not None:
        assert sorted(evicted_names(evictor)) == sorted(names)
