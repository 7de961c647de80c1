"""Upstream's TestPodAntiAffinity (removepodsviolatinginterpodantiaffinity/
pod_antiaffinity_test.go), case by case: the number of pods evicted."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import (
    Affinity,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
)
from services.descheduler.evictions import Limits
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.podantiaffinity import (
    RemovePodsViolatingInterPodAntiAffinityArgs as Args,
)
from services.descheduler.plugins.podantiaffinity import new
from tests.unit.descheduler.support import build_node, owned_pod, run_plugin

REGION = {"region": "main-region"}


def anti(key: str, value: str) -> Affinity:
    """``test.SetPodAntiAffinity``: required, ``key In (value)``, topology ``region``."""
    selector = LabelSelector(
        match_expressions=[LabelSelectorRequirement(key=key, operator="In", values=[value])]
    )
    term = PodAffinityTerm(label_selector=selector, topology_key="region")
    return Affinity(
        pod_anti_affinity=PodAffinity(required_during_scheduling_ignored_during_execution=[term])
    )


def with_anti(name: str) -> Pod:
    """``buildTestPodWithAntiAffinityForNode1``."""
    return owned_pod(name, spec_affinity=anti("foo", "bar"))


P2 = owned_pod("p2", meta_labels={"foo": "bar"})
NON_EVICT = owned_pod(
    "non-evict", owners=[], spec_priority=2_000_000_000, meta_labels={"foo": "bar"}
)
N1 = build_node("n1", 2000, 3000, 10, labels=REGION)
FOUR = [with_anti("p1"), P2, with_anti("p3"), with_anti("p4")]
P8 = owned_pod("p8", spec_node_selector={"datacenter": "west"}, spec_affinity=anti("foo", "bar"))
CASES: dict[str, tuple[list[Pod], list[Node], int, dict[str, Any]]] = {
    "Maximum pods to evict - 0": (FOUR, [N1], 3, {}),
    "Maximum pods to evict - 3": (FOUR, [N1], 3, {"limits": Limits(per_node=3)}),
    "Maximum pods to evict (maxPodsToEvictPerNamespace=3) - 3": (
        FOUR,
        [N1],
        3,
        {"limits": Limits(per_namespace=3)},
    ),
    "Maximum pods to evict (maxNoOfPodsToEvictTotal)": (
        FOUR,
        [N1],
        1,
        {"limits": Limits(per_namespace=3, total=1)},
    ),
    "Evict only 1 pod after sorting": (
        [
            owned_pod(
                "p5",
                meta_labels={"foo": "bar"},
                spec_affinity=anti("foo1", "bar1"),
                spec_priority=100,
            ),
            owned_pod(
                "p6",
                meta_labels={"foo": "bar"},
                spec_affinity=anti("foo1", "bar1"),
                spec_priority=50,
            ),
            owned_pod(
                "p7",
                meta_labels={"foo1": "bar1"},
                spec_affinity=anti("foo", "bar"),
                spec_priority=0,
            ),
        ],
        [N1],
        1,
        {},
    ),
    "Evicts pod that conflicts with critical pod (but does not evict critical pod)": (
        [with_anti("p1"), NON_EVICT],
        [N1],
        1,
        {"limits": Limits(per_node=1)},
    ),
    "Won't evict pods because node selectors don't match available nodes": (
        [P8, NON_EVICT],
        [N1, build_node("n2", 2000, 3000, 10, labels={"datacenter": "east"})],
        0,
        {"limits": Limits(per_node=1), "fit": True},
    ),
    "Won't evict pods because only other node is not schedulable": (
        [P8, NON_EVICT],
        [N1, build_node("n3", 2000, 3000, 10, unschedulable=True)],
        0,
        {"limits": Limits(per_node=1), "fit": True},
    ),
    "No pod to evicted since all pod terminating": (
        [
            owned_pod(
                "p9",
                spec_affinity=anti("foo", "bar"),
                meta_deletion_timestamp="1970-01-01T00:00:00Z",
            ),
            owned_pod(
                "p10",
                spec_affinity=anti("foo", "bar"),
                meta_deletion_timestamp="1970-01-01T00:00:00Z",
            ),
        ],
        [N1],
        0,
        {},
    ),
    "Won't evict pods because only other node doesn't have enough resources": (
        FOUR,
        [N1, build_node("n4", 2, 2, 1)],
        0,
        {"limits": Limits(per_node=3), "fit": True},
    ),
    "Evict pod violating anti-affinity among different node (all pods have anti-affinity)": (
        [with_anti("p1"), owned_pod("p11", "n5", meta_labels={"foo": "bar"})],
        [N1, build_node("n5", 200, 3000, 10, labels=REGION)],
        1,
        {},
    ),
}


@pytest.mark.parametrize(("pods", "nodes", "evicted", "extra"), CASES.values(), ids=CASES.keys())
def test_pod_anti_affinity(
    pods: list[Pod], nodes: list[Node], evicted: int, extra: dict[str, Any]
) -> None:
    evictor = run_plugin(
        new,
        Args(),
        nodes,
        pods,
        evictor_args=DefaultEvictorArgs(node_fit=extra.get("fit", False)),
        limits=extra.get("limits"),
    )
    assert evictor.total_evicted == evicted
