"""What the ports of upstream's nodeutilization tables share (test_nodeutilization_upstream.py,
test_highnodeutilization_upstream.py): upstream's priorities, owner kinds and volumes, and
its pod and node builders (``test.BuildTestPod`` with the changes each case applies)."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.k8s import (
    Affinity,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerReference,
    Pod,
    PodMetrics,
    Taint,
)
from contracts.k8s.pod import Volume
from tests.unit.descheduler.nodeutilization_support import pod_metrics
from tests.unit.descheduler.support import (
    RS_OWNER,
    build_node,
    build_pod,
    with_,
)

LOW_PRIORITY = 0
HIGH_PRIORITY = 10000
SYSTEM_CRITICAL = 2 * 1_000_000_000
"""``utils.SystemCriticalPriority``."""
EXT = "example.com/foo"
"""``extendedResource``."""
NORMAL = [OwnerReference(kind="Pod", api_version="v1", name="")]
"""``test.GetNormalPodOwnerRefList``."""
DS = [OwnerReference(kind="DaemonSet", api_version="v1", name="")]
"""``test.GetDaemonSetOwnerRefList``."""
LOCAL = [Volume(name="sample", host_path={"path": "somePath"}, empty_dir={"sizeLimit": "10"})]
"""``test.SetHostPathEmptyDirVolumeSource``."""
MIRROR = {
    "kubernetes.io/created-by": (
        '{"kind":"SerializedReference","apiVersion":"v1","reference":{"kind":"Pod"}}'
    ),
    "kubernetes.io/config.source": "api",
    "kubernetes.io/config.mirror": "mirror",
}
"""``test.GetMirrorPodAnnotation``."""


# ``test.BuildTestPod(name, cpu, memory, node, apply)`` with upstream's usual applies.


def rs(name: str, node: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Pod:
    """``test.SetRSOwnerRef``."""
    return build_pod(name, cpu, memory, node, owners=RS_OWNER, **changes)


def ds(name: str, node: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Pod:
    """``test.SetDSOwnerRef``."""
    return build_pod(name, cpu, memory, node, owners=DS, **changes)


def bare(name: str, node: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Pod:
    """No owner (only the apply's changes)."""
    return build_pod(name, cpu, memory, node, owners=[], **changes)


def local_mirror(name: str, node: str, cpu: int = 400, memory: int = 0, **changes: Any) -> Pod:
    """A pod with local storage, a mirror pod (``withLocalStorage``)."""
    return build_pod(
        name,
        cpu,
        memory,
        node,
        owners=NORMAL,
        spec_volumes=LOCAL,
        meta_annotations=dict(MIRROR),
        **changes,
    )


def critical(name: str, node: str, cpu: int = 400, memory: int = 0, *, owned: bool = True) -> Pod:
    """A critical pod in kube-system (``withCriticalPod``; ``owned``: with
    ``SetNormalOwnerRef``, which some cases leave out)."""
    return build_pod(
        name,
        cpu,
        memory,
        node,
        owners=NORMAL if owned else [],
        meta_namespace="kube-system",
        spec_priority=SYSTEM_CRITICAL,
    )


def best_effort(pod: Pod) -> Pod:
    """``test.MakeBestEffortPod``: the container without requests nor limits."""
    (container,) = pod.spec.containers
    resources = msgspec.structs.replace(container.resources, requests={}, limits={})
    return with_(pod, spec_containers=[msgspec.structs.replace(container, resources=resources)])


def extended(pod: Pod, amount: int) -> Pod:
    """``test.SetPodExtendedResourceRequest(pod, extendedResource, amount)``."""
    (container,) = pod.spec.containers
    requests = {**container.resources.requests, EXT: str(amount)}
    resources = msgspec.structs.replace(container.resources, requests=requests)
    return with_(pod, spec_containers=[msgspec.structs.replace(container, resources=resources)])


def west_affinity() -> Affinity:
    """Required node affinity ``datacenter In [west]``."""
    requirement = NodeSelectorRequirement(key="datacenter", operator="In", values=["west"])
    return Affinity(
        node_affinity=NodeAffinity(
            required_during_scheduling_ignored_during_execution=NodeSelector(
                node_selector_terms=[NodeSelectorTerm(match_expressions=[requirement])]
            )
        )
    )


def three_nodes() -> list[Node]:
    """n1 (9 pods), n2, n3 unschedulable: 4000m, 3000."""
    return [
        build_node("n1", 4000, 3000, 9),
        build_node("n2", 4000, 3000, 10),
        build_node("n3", 4000, 3000, 10, unschedulable=True),
    ]


def five_metrics(millicpu: int = 401) -> list[PodMetrics]:
    return [pod_metrics(f"p{i}", millicpu) for i in range(1, 6)]


KEY_TAINT = Taint(key="key", value="value", effect="NoSchedule")
