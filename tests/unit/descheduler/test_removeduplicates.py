"""Upstream's TestFindDuplicatePods (removeduplicates/removeduplicates_test.go), case by
case: the number of pods evicted."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import Container, Node, Pod, Taint
from contracts.k8s.pod import Volume
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.removeduplicates import RemoveDuplicatesArgs, new
from tests.unit.descheduler.support import (
    DS,
    NORMAL,
    RS_OWNER,
    build_node,
    build_pod,
    run_plugin,
    with_,
)

LOCAL = [Volume(name="sample", host_path={"path": "somePath"}, empty_dir={"medium": ""})]


def rs(name: str, namespace: str, **changes: Any) -> Pod:
    """``buildTestPodWithRSOwnerRefWithNamespaceForNode1``."""
    pod = with_(build_pod(name, 100, 0, "node1", owners=RS_OWNER), meta_namespace=namespace)
    return with_(pod, **changes) if changes else pod


def image(pod: Pod, name: str) -> Pod:
    first = pod.spec.containers[0]
    return with_(
        pod, spec_containers=[Container(name=first.name, image=name, resources=first.resources)]
    )


def plus_container(pod: Pod) -> Pod:
    return with_(pod, spec_containers=[*pod.spec.containers, Container(name="foo", image="foo")])


TWO = [build_node("node1"), build_node("node2")]
DEV = [rs("p1", "dev"), rs("p2", "dev"), rs("p3", "dev")]
TEST = [rs("p8", "test"), rs("p9", "test"), rs("p10", "test")]
PROTECTED = [
    build_pod("p4", 100, 0, "node1", owners=DS),
    with_(build_pod("p5", 100, 0, "node1", owners=NORMAL), spec_volumes=LOCAL),
    with_(
        build_pod("p6", 100, 0, "node1", owners=[]),
        meta_annotations={"kubernetes.io/config.mirror": "m"},
    ),
    with_(
        build_pod("p7", 100, 0, "node1", owners=[]),
        meta_namespace="kube-system",
        spec_priority=2_000_000_000,
    ),
]
GPU = Taint(key="hardware", value="gpu", effect="NoSchedule")
CASES = {
    "Three pods in the `dev` Namespace, bound to same ReplicaSet. 1 should be evicted.": (
        DEV,
        TWO,
        1,
        [],
        False,
    ),
    "Three pods in the `dev` Namespace, bound to same ReplicaSet, but ReplicaSet kind is "
    "excluded. 0 should be evicted.": (DEV, TWO, 0, ["ReplicaSet"], False),
    "Three Pods in the `test` Namespace, bound to same ReplicaSet. 1 should be evicted.": (
        TEST,
        TWO,
        1,
        [],
        False,
    ),
    "Three Pods in the `dev` Namespace, three Pods in the `test` Namespace. Bound to "
    "ReplicaSet with same name. 4 should be evicted.": (DEV + TEST, TWO, 2, [], False),
    "Pods are: part of DaemonSet, with local storage, mirror pod annotation, critical pod "
    "annotation - none should be evicted.": (PROTECTED, TWO, 0, [], False),
    "Test all Pods: 4 should be evicted.": (DEV + PROTECTED + TEST, TWO, 2, [], False),
    "Pods with the same owner but different images should not be evicted": (
        [image(rs("p11", "different-images"), "foo"), image(rs("p12", "different-images"), "bar")],
        TWO,
        0,
        [],
        False,
    ),
    "Pods with multiple containers should not match themselves": (
        [plus_container(rs("p13", "different-images"))],
        TWO,
        0,
        [],
        False,
    ),
    "Pods with matching ownerrefs and at not all matching image should not trigger an eviction": (
        [
            image(rs("p11", "different-images"), "foo"),
            plus_container(rs("p13", "different-images")),
        ],
        TWO,
        0,
        [],
        False,
    ),
    "Three pods in the `dev` Namespace, bound to same ReplicaSet. Only node available has a "
    "taint, and nodeFit set to true. 0 should be evicted.": (
        DEV,
        [build_node("node1"), build_node("node3", taints=[GPU])],
        0,
        [],
        True,
    ),
}


@pytest.mark.parametrize(
    ("pods", "nodes", "evicted", "exclude", "node_fit"), CASES.values(), ids=CASES.keys()
)
def test_find_duplicate_pods(
    pods: list[Pod], nodes: list[Node], evicted: int, exclude: list[str], node_fit: bool
) -> None:
    evictor = run_plugin(
        new,
        RemoveDuplicatesArgs(exclude_owner_kinds=exclude),
        nodes,
        pods,
        evictor_args=DefaultEvictorArgs(node_fit=node_fit),
        balance=True,
    )
    assert evictor.total_evicted == evicted
