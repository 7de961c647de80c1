"""Upstream's TestDeletePodsViolatingNodeTaints (removepodsviolatingnodetaints/
node_taint_test.go), case by case: the number of pods evicted."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import Node, Pod, Taint, Toleration
from contracts.k8s.pod import Volume
from services.descheduler.evictions import Limits
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.nodetaints import (
    RemovePodsViolatingNodeTaintsArgs as Args,
)
from services.descheduler.plugins.nodetaints import new
from tests.unit.descheduler.support import DS, build_node, owned_pod, run_plugin

TAINT1 = Taint(key="testTaint1", value="test1", effect="NoSchedule")
TESTING1 = Taint(key="testingTaint1", value="testing1", effect="NoSchedule")
PREFER1 = Taint(key="testTaint1", value="test1", effect="PreferNoSchedule")


def tolerating(name: str, node: str, key: str = "testTaint1", value: str = "test1") -> Pod:
    return owned_pod(
        name, node, spec_tolerations=[Toleration(key=key, value=value, effect="NoSchedule")]
    )


def critical(name: str, node: str) -> Pod:
    return owned_pod(name, node, meta_namespace="kube-system", spec_priority=2_000_000_000)


def local(name: str, node: str) -> Pod:
    return owned_pod(
        name, node, spec_volumes=[Volume(name="s", host_path={"path": "p"}, empty_dir={})]
    )


def mirror(name: str, node: str) -> Pod:
    return owned_pod(name, node, meta_annotations={"kubernetes.io/config.mirror": "m"})


N1 = [build_node("n1", taints=[TAINT1])]
P13 = owned_pod(
    "p13",
    "n5",
    spec_tolerations=[Toleration(key="testTaint0", value="test0", effect="PreferNoSchedule")],
)
"""Tolerates ``testTaint0``, not the node's ``testTaint1``."""
CASES: dict[str, tuple[list[Pod], list[Node], int, dict[str, Any]]] = {
    "Pods not tolerating node taint should be evicted": (
        [tolerating("p1", "n1"), owned_pod("p2", "n1"), tolerating("p3", "n1")],
        N1,
        1,
        {},
    ),
    "Pods with tolerations but not tolerating node taint should be evicted": (
        [
            tolerating("p1", "n1"),
            tolerating("p3", "n1"),
            tolerating("p4", "n1", "testTaintX1", "testX1"),
        ],
        N1,
        1,
        {},
    ),
    "Only <maxNoOfPodsToEvictTotal> number of Pods not tolerating node taint should be evicted": (
        [tolerating("p1", "n1"), owned_pod("p5", "n1"), owned_pod("p6", "n1")],
        N1,
        1,
        {"limits": Limits(per_node=2, total=1)},
    ),
    "Only <maxPodsToEvictPerNode> number of Pods not tolerating node taint should be evicted": (
        [tolerating("p1", "n1"), owned_pod("p5", "n1"), owned_pod("p6", "n1")],
        N1,
        1,
        {"limits": Limits(per_node=1)},
    ),
    "Only <maxNoOfPodsToEvictPerNamespace> number of Pods not tolerating node taint should be "
    "evicted": (
        [tolerating("p1", "n1"), owned_pod("p5", "n1"), owned_pod("p6", "n1")],
        N1,
        1,
        {"limits": Limits(per_namespace=1)},
    ),
    "Critical pods not tolerating node taint should not be evicted": (
        [critical("p7", "n2"), owned_pod("p8", "n2", DS), local("p9", "n2"), mirror("p10", "n2")],
        [build_node("n2", taints=[TESTING1])],
        0,
        {},
    ),
    "Critical pods except storage pods not tolerating node taint should not be evicted": (
        [critical("p7", "n2"), owned_pod("p8", "n2", DS), local("p9", "n2"), mirror("p10", "n2")],
        [build_node("n2", taints=[TESTING1])],
        1,
        {"evictor": DefaultEvictorArgs(evict_local_storage_pods=True)},
    ),
    "Critical and non critical pods, only non critical pods not tolerating node taint should be "
    "evicted": (
        [
            critical("p7", "n2"),
            owned_pod("p8", "n2", DS),
            mirror("p10", "n2"),
            owned_pod("p11", "n2"),
        ],
        [build_node("n2", taints=[TESTING1])],
        1,
        {},
    ),
    "Critical and non critical pods, pods not tolerating node taint should be evicted even if "
    "they are critical": (
        [owned_pod("p2", "n1"), critical("p7", "n2"), local("p9", "n2"), mirror("p10", "n2")],
        [build_node("n1", taints=[TAINT1]), build_node("n2", taints=[TESTING1])],
        2,
        {"evictor": DefaultEvictorArgs(evict_system_critical_pods=True)},
    ),
    "Pod p2 doesn't tolerate taint on it's node, but also doesn't tolerate taints on other nodes": (
        [tolerating("p1", "n1"), owned_pod("p2", "n1"), tolerating("p3", "n1")],
        [build_node("n1", taints=[TAINT1]), build_node("n2", taints=[TESTING1])],
        0,
        {"evictor": DefaultEvictorArgs(node_fit=True)},
    ),
    "Pod p2 doesn't tolerate taint on it's node, but other nodes are unschedulable": (
        [tolerating("p1", "n1"), owned_pod("p2", "n1"), tolerating("p3", "n1")],
        [build_node("n1", taints=[TAINT1]), build_node("n4", unschedulable=True)],
        0,
        {"evictor": DefaultEvictorArgs(node_fit=True)},
    ),
    "Pods not tolerating PreferNoSchedule node taint should not be evicted when not enabled": (
        [P13],
        [build_node("n5", taints=[PREFER1])],
        0,
        {},
    ),
    "Pods not tolerating PreferNoSchedule node taint should be evicted when enabled": (
        [P13],
        [build_node("n5", taints=[PREFER1])],
        1,
        {"args": Args(include_prefer_no_schedule=True)},
    ),
    "Pods not tolerating excluded node taints (by key) should not be evicted": (
        [owned_pod("p2", "n1")],
        N1,
        0,
        {"args": Args(excluded_taints=["excludedTaint1", "testTaint1"])},
    ),
    "Pods not tolerating excluded node taints (by key and value) should not be evicted": (
        [owned_pod("p2", "n1")],
        N1,
        0,
        {"args": Args(excluded_taints=["testTaint1=test1"])},
    ),
    "The excluded taint matches the key of node1's taint, but does not match the value": (
        [owned_pod("p2", "n1")],
        N1,
        1,
        {"args": Args(excluded_taints=["testTaint1=test2"])},
    ),
    "Pods tolerating included taints should not get evicted even with other taints present": (
        [tolerating("p1", "n1")],
        [build_node("n1", taints=[TAINT1, TESTING1])],
        0,
        {"args": Args(included_taints=["testTaint1=test1"])},
    ),
    "Pods not tolerating not included taints should not get evicted": (
        [
            tolerating("p1", "n1"),
            owned_pod("p2", "n1"),
            tolerating("p4", "n1", "testTaintX1", "testX1"),
        ],
        N1,
        0,
        {"args": Args(included_taints=["testTaint2=test2"])},
    ),
    "Pods tolerating includedTaint should not get evicted. Pods not tolerating includedTaints "
    "should get evicted": (
        [tolerating("p1", "n1"), owned_pod("p2", "n1"), tolerating("p3", "n1")],
        N1,
        1,
        {"args": Args(included_taints=["testTaint1=test1"])},
    ),
}


@pytest.mark.parametrize(("pods", "nodes", "evicted", "extra"), CASES.values(), ids=CASES.keys())
def test_node_taints(
    pods: list[Pod], nodes: list[Node], evicted: int, extra: dict[str, Any]
) -> None:
    evictor = run_plugin(
        new,
        extra.get("args", Args()),
        nodes,
        pods,
        evictor_args=extra.get("evictor"),
        limits=extra.get("limits"),
    )
    assert evictor.total_evicted == evicted
