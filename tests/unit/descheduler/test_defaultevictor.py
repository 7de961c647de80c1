"""Upstream's TestDefaultEvictorFilter and TestDefaultEvictorPreEvictionFilter
(defaultevictor/defaultevictor_test.go), case by case: does DefaultEvictor let the
first pod through?"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from contracts.k8s import (
    LabelSelector,
    Namespace,
    Node,
    ObjectMeta,
    OwnerReference,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodResourceClaim,
    Taint,
    Toleration,
)
from contracts.k8s.pod import PersistentVolumeClaimVolumeSource, Volume
from contracts.k8s.storage import PersistentVolumeClaimSpec
from services.descheduler.api import ClusterView
from services.descheduler.evictions import PodEvictor
from services.descheduler.nodefit import SchedulerFit
from services.descheduler.plugins.defaultevictor import (
    DefaultEvictor,
    DefaultEvictorArgs,
    PodProtections,
    PodProtectionsConfig,
    PodsWithPVCConfig,
    PriorityThreshold,
    ProtectedStorageClass,
    effective_protections,
)
from services.descheduler.profile import PluginHandle, ProfileEvictor
from tests.unit.descheduler.support import NORMAL, NOW, build_node, build_pod, owned_pod, with_

GPU = Taint(key="hardware", value="gpu", effect="NoSchedule")
N1 = build_node("node1", 1000, 2000, 13)
LOW, HIGH = 800, 900


LOCAL = [Volume(name="sample", host_path={"path": "somePath"}, empty_dir={"medium": ""})]
FOO_CLAIM = [
    Volume(name="pvc", persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name="foo"))
]
GPU_CLAIM = [PodResourceClaim(name="gpu", resource_claim_template_name="gpu-template")]
EVICT = {"descheduler.alpha.kubernetes.io/evict": "true"}
SOFT = {"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}


def claim(name: str, storage_class: str) -> PersistentVolumeClaim:
    return PersistentVolumeClaim(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PersistentVolumeClaimSpec(storage_class_name=storage_class),
    )


def started(minutes_ago: int) -> str:
    from services.common.decisions import rfc3339

    return rfc3339(NOW - minutes_ago * 60)


@dataclass
class Case:
    pods: list[Pod]
    result: bool = False
    args: dict[str, Any] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    claims: list[PersistentVolumeClaim] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)


def evictor(case: Case) -> DefaultEvictor:
    """``initializePlugin``: DefaultEvictor with the case's args (priority threshold
    given by value) on a cluster of node1, the case's nodes and pods."""
    args = dict(case.args)
    args.setdefault("priority_threshold", PriorityThreshold(value=args.pop("threshold", None)))
    cluster = ClusterView(
        [N1, *case.nodes],
        case.pods,
        NOW,
        {n.metadata.name: n for n in case.namespaces},
        case.pdbs,
        {("default", c.metadata.name): c for c in case.claims},
    )
    handle = PluginHandle(ProfileEvictor("test", PodEvictor()), cluster, SchedulerFit(cluster))
    return DefaultEvictor(DefaultEvictorArgs(**args), handle)


ONE = "owner-2"
PAIR = [OwnerReference(kind="Pod", api_version="v1", name="pod-owner", uid=ONE)]
FILTER = {
    "Failed pod eviction with no ownerRefs": Case(
        [owned_pod("bare", "node1", [], status_phase="Failed")]
    ),
    "Normal pod eviction with no ownerRefs and evictFailedBarePods enabled": Case(
        [owned_pod("bare", "node1", [])], args={"evict_failed_bare_pods": True}
    ),
    "Failed pod eviction with no ownerRefs (evictFailedBarePods)": Case(
        [owned_pod("bare", "node1", [], status_phase="Failed")],
        True,
        {"evict_failed_bare_pods": True},
    ),
    "Normal pod eviction with normal ownerRefs": Case([owned_pod("p", "node1")], True),
    "Normal pod eviction with normal ownerRefs and the evict annotation": Case(
        [owned_pod("p", "node1", meta_annotations=EVICT)], True
    ),
    "Normal pod eviction with normal ownerRefs and the prefer-no-eviction annotation "
    "(preference)": Case([owned_pod("p", "node1", meta_annotations=SOFT)], True),
    "Normal pod eviction with normal ownerRefs and the prefer-no-eviction annotation "
    "(mandatory)": Case(
        [owned_pod("p", "node1", meta_annotations=SOFT)], args={"no_eviction_policy": "Mandatory"}
    ),
    "Normal pod eviction with replicaSet ownerRefs": Case(
        [owned_pod("p", "node1", [OwnerReference(kind="ReplicaSet", api_version="v1", name="rs")])],
        True,
    ),
    "Normal pod eviction with statefulSet ownerRefs": Case(
        [
            owned_pod(
                "p", "node1", [OwnerReference(kind="StatefulSet", api_version="v1", name="ss")]
            )
        ],
        True,
    ),
    "Pod not evicted because it is bound to a PV and evictLocalStoragePods = false": Case(
        [owned_pod("p", "node1", spec_volumes=LOCAL)]
    ),
    "Pod is evicted because it is bound to a PV and evictLocalStoragePods = true": Case(
        [owned_pod("p", "node1", spec_volumes=LOCAL)], True, {"evict_local_storage_pods": True}
    ),
    "Pod is evicted because it is bound to a PV and evictLocalStoragePods = false, but it has "
    "the evict annotation": Case(
        [owned_pod("p", "node1", spec_volumes=LOCAL, meta_annotations=EVICT)], True
    ),
    "Pod not evicted because it is part of a daemonSet": Case(
        [owned_pod("p", "node1", [OwnerReference(kind="DaemonSet", api_version="v1", name="ds")])]
    ),
    "Pod is evicted because it is part of a daemonSet, but it has the evict annotation": Case(
        [
            owned_pod(
                "p",
                "node1",
                [OwnerReference(kind="DaemonSet", api_version="v1", name="ds")],
                meta_annotations=EVICT,
            )
        ],
        True,
    ),
    "Pod not evicted because it is a mirror pod": Case(
        [owned_pod("p", "node1", meta_annotations={"kubernetes.io/config.mirror": "mirror"})]
    ),
    "Pod is evicted because it is a mirror pod, but it has the evict annotation": Case(
        [
            owned_pod(
                "p", "node1", meta_annotations={"kubernetes.io/config.mirror": "mirror", **EVICT}
            )
        ],
        True,
    ),
    "Pod not evicted because it has system critical priority": Case(
        [owned_pod("p", "node1", spec_priority=2_000_000_000)]
    ),
    "Pod is evicted because it has system critical priority, but it has the evict annotation": (
        Case([owned_pod("p", "node1", spec_priority=2_000_000_000, meta_annotations=EVICT)], True)
    ),
    "Pod not evicted because it has a priority higher than the configured priority threshold": (
        Case([owned_pod("p", "node1", spec_priority=HIGH)], args={"threshold": LOW})
    ),
    "Pod is evicted because it has a priority higher than the configured priority threshold, "
    "but it has the evict annotation": Case(
        [owned_pod("p", "node1", spec_priority=HIGH, meta_annotations=EVICT)],
        True,
        {"threshold": LOW},
    ),
    "Pod is evicted because it has system critical priority, but evictSystemCriticalPods = "
    "true": Case(
        [owned_pod("p", "node1", spec_priority=2_000_000_000)],
        True,
        {"evict_system_critical_pods": True},
    ),
    "Pod is evicted because it has a priority higher than the configured priority threshold, "
    "but evictSystemCriticalPods = true": Case(
        [owned_pod("p", "node1", spec_priority=HIGH)],
        True,
        {"evict_system_critical_pods": True, "threshold": LOW},
    ),
    "Pod with no tolerations running on normal node, all other nodes tainted, no "
    "PreEvictionFilter, should ignore nodeFit": Case(
        [owned_pod("p", "node1")],
        True,
        {"node_fit": True},
        [
            build_node("node2", 1000, 2000, 13, taints=[GPU]),
            build_node("node3", 1000, 2000, 13, taints=[GPU]),
        ],
    ),
    "minReplicas of 2, owner with 2 replicas, evicts": Case(
        [owned_pod("p1", "node1", PAIR), owned_pod("p2", "node1", PAIR)], True, {"min_replicas": 2}
    ),
    "minReplicas of 3, owner with 2 replicas, no eviction": Case(
        [owned_pod("p1", "node1", PAIR), owned_pod("p2", "node1", PAIR)], args={"min_replicas": 3}
    ),
    "minReplicas of 2, multiple owners, no eviction": Case(
        [owned_pod("p1", "node1", PAIR + NORMAL), owned_pod("p2", "node1")],
        True,
        {"min_replicas": 2},
    ),
    "minPodAge of 50, pod created 10 minutes ago, no eviction": Case(
        [owned_pod("p", "node1", status_start_time=started(10))], args={"min_pod_age": "50m"}
    ),
    "minPodAge of 50, pod created 60 minutes ago, evicts": Case(
        [owned_pod("p", "node1", status_start_time=started(60))], True, {"min_pod_age": "50m"}
    ),
    "nil minPodAge, pod created 60 minutes ago, evicts": Case(
        [owned_pod("p", "node1", status_start_time=started(60))], True
    ),
    "ignorePodsWithoutPDB, pod with no PDBs, no eviction": Case(
        [owned_pod("p", "node1", meta_labels={"app": "foo"})],
        args={"ignore_pods_without_pdb": True},
    ),
    "ignorePodsWithoutPDB, pod with PDBs, evicts": Case(
        [owned_pod("p", "node1", meta_labels={"app": "foo"})],
        True,
        {"ignore_pods_without_pdb": True},
        pdbs=[
            PodDisruptionBudget(
                metadata=ObjectMeta(name="pdb1", namespace="default"),
                spec=PodDisruptionBudgetSpec(selector=LabelSelector(match_labels={"app": "foo"})),
            )
        ],
    ),
    "ignorePvcPods is set, pod with PVC, not evicts": Case(
        [owned_pod("p", "node1", spec_volumes=FOO_CLAIM)], args={"ignore_pvc_pods": True}
    ),
    "ignorePvcPods is not set, pod with PVC, evicts": Case(
        [owned_pod("p", "node1", spec_volumes=FOO_CLAIM)], True
    ),
    "Pod with local storage is evicted because 'PodsWithLocalStorage' is in DefaultDisabled": (
        Case(
            [owned_pod("p", "node1", spec_volumes=LOCAL)],
            True,
            {"pod_protections": PodProtections(default_disabled=["PodsWithLocalStorage"])},
        )
    ),
    "DaemonSet pod is evicted because 'DaemonSetPods' is in DefaultDisabled": Case(
        [owned_pod("p", "node1", [OwnerReference(kind="DaemonSet", api_version="v1", name="ds")])],
        True,
        {"pod_protections": PodProtections(default_disabled=["DaemonSetPods"])},
    ),
    "Pod with PVC is not evicted because 'PodsWithPVC' is in ExtraEnabled": Case(
        [owned_pod("p", "node1", spec_volumes=FOO_CLAIM)],
        args={"pod_protections": PodProtections(extra_enabled=["PodsWithPVC"])},
    ),
    "Pod with ResourceClaims is not evicted because 'PodsWithResourceClaims' is in "
    "ExtraEnabled": Case(
        [owned_pod("p", "node1", spec_resource_claims=GPU_CLAIM)],
        args={"pod_protections": PodProtections(extra_enabled=["PodsWithResourceClaims"])},
    ),
    "Pod with ResourceClaims is evicted when 'PodsWithResourceClaims' is not enabled": Case(
        [owned_pod("p", "node1", spec_resource_claims=GPU_CLAIM)], True
    ),
    "Pod without ResourceClaims is evicted though 'PodsWithResourceClaims' is in "
    "ExtraEnabled": Case(
        [owned_pod("p", "node1")],
        True,
        {"pod_protections": PodProtections(extra_enabled=["PodsWithResourceClaims"])},
    ),
    "Pod without PDB is not evicted because 'PodsWithoutPDB' is in ExtraEnabled": Case(
        [owned_pod("p", "node1")],
        args={"pod_protections": PodProtections(extra_enabled=["PodsWithoutPDB"])},
    ),
    "Pod using StorageClass is not evicted because 'PodsWithPVC' is in ExtraEnabled": Case(
        [owned_pod("p", "node1", spec_volumes=FOO_CLAIM)],
        args={
            "pod_protections": PodProtections(
                extra_enabled=["PodsWithPVC"],
                config=PodProtectionsConfig(
                    PodsWithPVC=PodsWithPVCConfig(
                        protected_storage_classes=[
                            ProtectedStorageClass(name="protected-storage-class-0")
                        ]
                    )
                ),
            )
        },
        claims=[claim("foo", "protected-storage-class-0")],
    ),
    "Pod using unprotected StorageClass is evicted even though 'PodsWithPVC' is in "
    "ExtraEnabled": Case(
        [owned_pod("p", "node1", spec_volumes=FOO_CLAIM)],
        True,
        {
            "pod_protections": PodProtections(
                extra_enabled=["PodsWithPVC"],
                config=PodProtectionsConfig(
                    PodsWithPVC=PodsWithPVCConfig(
                        protected_storage_classes=[
                            ProtectedStorageClass(name="protected-storage-class-0")
                        ]
                    )
                ),
            )
        },
        claims=[claim("foo", "unprotected-storage-class-0")],
    ),
    "Pod using unexisting PVC is not evicted because we cannot determine if storage class is "
    "protected or not": Case(
        [owned_pod("p", "node1", spec_volumes=FOO_CLAIM)],
        args={
            "pod_protections": PodProtections(
                extra_enabled=["PodsWithPVC"],
                config=PodProtectionsConfig(
                    PodsWithPVC=PodsWithPVCConfig(
                        protected_storage_classes=[
                            ProtectedStorageClass(name="protected-storage-class-0")
                        ]
                    )
                ),
            )
        },
    ),
}


@pytest.mark.parametrize("case", FILTER.values(), ids=FILTER.keys())
def test_filter(case: Case) -> None:
    assert evictor(case).filter(case.pods[0]) is case.result


def _selector_pod(**labels: str) -> Pod:
    return owned_pod("p", "node1", spec_node_selector=dict(labels))


EAST = {"datacenter": "east"}
PRE_EVICTION = {
    "Pod with no tolerations running on normal node, all other nodes tainted": Case(
        [owned_pod("p", "node1")],
        args={"node_fit": True},
        nodes=[
            build_node("node2", 1000, 2000, 13, taints=[GPU]),
            build_node("node3", 1000, 2000, 13, taints=[GPU]),
        ],
    ),
    "Pod with correct tolerations running on normal node, all other nodes tainted": Case(
        [
            owned_pod(
                "p",
                "node1",
                spec_tolerations=[Toleration(key="hardware", value="gpu", effect="NoSchedule")],
            )
        ],
        True,
        {"node_fit": True},
        [
            build_node("node2", 1000, 2000, 13, taints=[GPU]),
            build_node("node3", 1000, 2000, 13, taints=[GPU]),
        ],
    ),
    "Pod with incorrect node selector": Case(
        [_selector_pod(datacenter="west")],
        args={"node_fit": True},
        nodes=[
            build_node("node2", 1000, 2000, 13, labels=EAST),
            build_node("node3", 1000, 2000, 13, labels=EAST),
        ],
    ),
    "Pod with correct node selector": Case(
        [_selector_pod(**EAST)],
        True,
        {"node_fit": True},
        [
            build_node("node2", 1000, 2000, 13, labels=EAST),
            build_node("node3", 1000, 2000, 13, labels=EAST),
        ],
    ),
    "Pod with correct node selector, but only available node doesn't have enough CPU": Case(
        [with_(build_pod("p1", 12, 8, "node1", owners=NORMAL), spec_node_selector=EAST)],
        args={"node_fit": True},
        nodes=[
            build_node("node2-TEST", 10, 16, 10, labels=EAST),
            build_node("node3-TEST", 10, 16, 10, labels=EAST),
        ],
    ),
    "Pod with incorrect node selector, but nodefit false, should still be evicted": Case(
        [_selector_pod(datacenter="west")],
        True,
        nodes=[
            build_node("node2", 1000, 2000, 13, labels=EAST),
            build_node("node3", 1000, 2000, 13, labels=EAST),
        ],
    ),
    "Pod with namespace matched namespace selector, should be evicted": Case(
        [owned_pod("p", "node1")],
        True,
        {
            "node_fit": True,
            "namespace_label_selector": LabelSelector(
                match_labels={"kubernetes.io/metadata.name": "default"}
            ),
        },
        [build_node("node2", 1000, 2000, 13)],
        namespaces=[
            Namespace(
                metadata=ObjectMeta(
                    name="default", labels={"kubernetes.io/metadata.name": "default"}
                )
            )
        ],
    ),
    "Pod with namespace does not matched namespace selector, should not be evicted": Case(
        [owned_pod("p", "node1")],
        False,
        {
            "node_fit": True,
            "namespace_label_selector": LabelSelector(
                match_labels={"kubernetes.io/metadata.name": "test"}
            ),
        },
        [build_node("node2", 1000, 2000, 13)],
        namespaces=[
            Namespace(
                metadata=ObjectMeta(
                    name="default", labels={"kubernetes.io/metadata.name": "default"}
                )
            )
        ],
    ),
}


@pytest.mark.parametrize("case", PRE_EVICTION.values(), ids=PRE_EVICTION.keys())
def test_pre_eviction_filter(case: Case) -> None:
    assert evictor(case).pre_eviction_filter(case.pods[0]) is case.result


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            DefaultEvictorArgs(),
            {"PodsWithLocalStorage", "DaemonSetPods", "SystemCriticalPods", "FailedBarePods"},
        ),
        (
            DefaultEvictorArgs(
                pod_protections=PodProtections(default_disabled=["PodsWithLocalStorage"])
            ),
            {"DaemonSetPods", "SystemCriticalPods", "FailedBarePods"},
        ),
        (
            DefaultEvictorArgs(pod_protections=PodProtections(extra_enabled=["PodsWithPVC"])),
            {
                "PodsWithLocalStorage",
                "DaemonSetPods",
                "SystemCriticalPods",
                "FailedBarePods",
                "PodsWithPVC",
            },
        ),
        (
            DefaultEvictorArgs(evict_local_storage_pods=True, ignore_pvc_pods=True),
            {"DaemonSetPods", "SystemCriticalPods", "FailedBarePods", "PodsWithPVC"},
        ),
    ],
)
def test_effective_pod_protections(args: DefaultEvictorArgs, expected: set[str]) -> None:
    assert set(effective_protections(args)) == expected
