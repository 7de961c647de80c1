"""The queue's view of one pod: its PodInfo with the priority QueueSort compares, and
the gang it belongs to (scheduler-plugins' PodGroup label or the native
``spec.schedulingGroup``)."""

from __future__ import annotations

from dataclasses import replace

from contracts.k8s import POD_GROUP_LABEL, Pod, namespaced_name
from services.common.resources import ResourceError
from services.framework.api.types import PodInfo
from services.queue.cluster_events import same_requests


def pod_info(pod: Pod, priority: int, previous: PodInfo | None = None) -> PodInfo:
    """The pod's PodInfo with its resolved priority (what QueueSort compares); the
    requests of ``previous`` (the pod's last PodInfo) are reused when they cannot have
    changed."""
    if previous is not None and same_requests(pod, previous.pod):
        return replace(previous, pod=pod, priority=priority)
    try:
        info = PodInfo.of(pod)
    except ResourceError:  # the informer refuses such pods; never fail the queue on one
        info = PodInfo(pod, pod.metadata.uid, namespaced_name(pod.metadata), priority, {}, {})
    return info if info.priority == priority else replace(info, priority=priority)


def gang_of(pod: Pod) -> tuple[str, str] | None:
    """The pod's group (namespace, ``scheduling.x-k8s.io/pod-group``), if any; a native
    group (``spec.schedulingGroup``) as (namespace, ``scheduling.k8s.io/<name>``)."""
    native = native_group_of(pod)
    if native is not None:
        return native
    group = pod_group_name(pod)
    return (pod.metadata.namespace or "default", group) if group else None


def native_group_of(pod: Pod) -> tuple[str, str] | None:
    name = native_group_name(pod)
    if name is None:
        return None
    return (pod.metadata.namespace or "default", f"scheduling.k8s.io/{name}")


def pod_group_name(pod: Pod) -> str | None:
    """The scheduler-plugins PodGroup the pod names (its ``pod-group`` label)."""
    return pod.metadata.labels.get(POD_GROUP_LABEL) or None


def native_group_name(pod: Pod) -> str | None:
    """The native PodGroup the pod names (``spec.schedulingGroup.podGroupName``)."""
    group = pod.spec.scheduling_group
    return group.pod_group_name or None if group is not None else None
