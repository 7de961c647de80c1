"""Upstream's TestRemovePodsViolatingNodeAffinity (removepodsviolatingnodeaffinity/
node_affinity_test.go), case by case: the number of pods evicted."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import (
    Affinity,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
)
from services.descheduler.evictions import Limits
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.nodeaffinity import (
    RemovePodsViolatingNodeAffinityArgs as Args,
)
from services.descheduler.plugins.nodeaffinity import new
from tests.unit.descheduler.support import NORMAL, build_node, build_pod, run_plugin, with_

KEY, VALUE = "kubernetes.io/desiredNode", "yes"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
TERM = NodeSelectorTerm(
    match_expressions=[NodeSelectorRequirement(key=KEY, operator="In", values=[VALUE])]
)


def add_pods(node: str, kind: str, terminating: bool = False) -> list[Pod]:
    """``addPodsToNode``: one pod with the node affinity, two without."""
    affinity = NodeAffinity()
    if kind == REQUIRED:
        affinity = NodeAffinity(
            required_during_scheduling_ignored_during_execution=NodeSelector(
                node_selector_terms=[TERM]
            )
        )
    elif kind == PREFERRED:
        affinity = NodeAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                PreferredSchedulingTerm(weight=10, preference=TERM)
            ]
        )
    stamp = {"meta_deletion_timestamp": "1970-01-01T00:00:00Z"} if terminating else {}
    pods = [
        with_(
            build_pod("podWithNodeAffinity", 100, 0, node, owners=NORMAL),
            spec_affinity=Affinity(node_affinity=affinity),
            **stamp,
        )
    ]
    for name in ("pod1", "pod2"):
        plain = build_pod(name, 100, 0, node, owners=NORMAL)
        pods.append(with_(plain, **stamp) if stamp else plain)
    return pods


WITHOUT = build_node("nodeWithoutLabels")
WITH = build_node("nodeWithLabels", labels={KEY: VALUE})
UNSCHEDULABLE = build_node("unschedulableNodeWithLabels", labels={KEY: VALUE}, unschedulable=True)
CASES: dict[str, tuple[str, list[Pod], list[Node], int, dict[str, Any]]] = {
    "Invalid Affinity type, should not evict any pods": (
        "requiredDuringSchedulingRequiredDuringExecution",
        add_pods("nodeWithoutLabels", "requiredDuringSchedulingRequiredDuringExecution"),
        [WITHOUT, WITH],
        0,
        {},
    ),
    "Pod is correctly scheduled on node, no eviction expected [required affinity]": (
        REQUIRED,
        add_pods("nodeWithLabels", REQUIRED),
        [WITH],
        0,
        {},
    ),
    "Pod is correctly scheduled on node, no eviction expected [preferred affinity]": (
        PREFERRED,
        add_pods("nodeWithLabels", PREFERRED),
        [WITH],
        0,
        {},
    ),
    "Pod is scheduled on node without matching labels, another schedulable node available, "
    "should be evicted": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED),
        [WITHOUT, WITH],
        1,
        {},
    ),
    "Pod is scheduled on node without matching labels, another schedulable node available "
    "with better fit, should be evicted": (
        PREFERRED,
        add_pods("nodeWithoutLabels", PREFERRED),
        [WITHOUT, WITH],
        1,
        {},
    ),
    "maxPodsToEvictPerNode set to 1, should be evicted [required affinity]": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED),
        [WITHOUT, WITH],
        1,
        {"limits": Limits(per_node=1)},
    ),
    "maxPodsToEvictPerNode set to 1, should be evicted [preferred affinity]": (
        PREFERRED,
        add_pods("nodeWithoutLabels", PREFERRED),
        [WITHOUT, WITH],
        1,
        {"limits": Limits(per_node=1)},
    ),
    "maxPodsToEvictPerNode set to 0, should be not evicted [required affinity]": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED),
        [WITHOUT, WITH],
        0,
        {"limits": Limits(per_node=0)},
    ),
    "maxPodsToEvictPerNode set to 0, should be not evicted [preferred affinity]": (
        PREFERRED,
        add_pods("nodeWithoutLabels", PREFERRED),
        [WITHOUT, WITH],
        0,
        {"limits": Limits(per_node=0)},
    ),
    "maxPodsToEvictPerNode set to 1, no pod evicted since pod terminating [required affinity]": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED, terminating=True),
        [WITHOUT, WITH],
        0,
        {"limits": Limits(per_node=1)},
    ),
    "maxPodsToEvictPerNode set to 1, no pod evicted since pod terminating [preferred affinity]": (
        PREFERRED,
        add_pods("nodeWithoutLabels", PREFERRED, terminating=True),
        [WITHOUT, WITH],
        0,
        {"limits": Limits(per_node=1)},
    ),
    "maxNoOfPodsToEvictPerNamespace set to 1, should be evicted [required affinity]": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED),
        [WITHOUT, WITH],
        1,
        {"limits": Limits(per_namespace=1)},
    ),
    "maxNoOfPodsToEvictTotal set to 0, should not be evicted [required affinity]": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED),
        [WITHOUT, WITH],
        0,
        {"limits": Limits(per_namespace=1, total=0)},
    ),
    "maxNoOfPodsToEvictPerNamespace set to 1, should be evicted [preferred affinity]": (
        PREFERRED,
        add_pods("nodeWithoutLabels", PREFERRED),
        [WITHOUT, WITH],
        1,
        {"limits": Limits(per_namespace=1)},
    ),
    "maxNoOfPodsToEvictPerNamespace set to 0, should not be evicted [required affinity]": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED),
        [WITHOUT, WITH],
        0,
        {"limits": Limits(per_namespace=0)},
    ),
    "Pod is scheduled on node without matching labels, but no node where pod fits is "
    "available, should not evict [required affinity]": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED),
        [WITHOUT, UNSCHEDULABLE],
        0,
        {"fit": True},
    ),
    "Pod is scheduled on node without matching labels, but no node where pod fits is "
    "available, should not evict [preferred affinity]": (
        PREFERRED,
        add_pods("nodeWithoutLabels", PREFERRED),
        [WITHOUT, UNSCHEDULABLE],
        0,
        {"fit": True},
    ),
    "Pod is scheduled on node without matching labels, and unschedulable node where pod "
    "could fit is available, should not evict [required affinity]": (
        REQUIRED,
        add_pods("nodeWithoutLabels", REQUIRED),
        [WITH, UNSCHEDULABLE],
        0,
        {"limits": Limits(per_node=1), "fit": True},
    ),
    "Pod is scheduled on node without matching labels, and unschedulable node where pod "
    "could fit is available, should not evict [preferred affinity]": (
        PREFERRED,
        add_pods("nodeWithoutLabels", PREFERRED),
        [WITH, UNSCHEDULABLE],
        0,
        {"limits": Limits(per_node=1), "fit": True},
    ),
}


@pytest.mark.parametrize(
    ("kind", "pods", "nodes", "evicted", "extra"), CASES.values(), ids=CASES.keys()
)
def test_node_affinity(
    kind: str, pods: list[Pod], nodes: list[Node], evicted: int, extra: dict[str, Any]
) -> None:
    evictor = run_plugin(
        new,
        Args(node_affinity_type=[kind]),
        nodes,
        pods,
        evictor_args=DefaultEvictorArgs(node_fit=extra.get("fit", False)),
        limits=extra.get("limits"),
    )
    assert evictor.total_evicted == evicted
