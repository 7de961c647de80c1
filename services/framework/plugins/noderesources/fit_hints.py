"""NodeResourcesFit's queueing hints: does this event free room for the rejected pod?

``isSchedulableAfterPodEvent`` and ``isSchedulableAfterNodeChange`` upstream. They are
scalar (one pod, one object) and run in the queue, not in the scheduling cycle.
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from contracts.k8s import Node, Pod
from services.common.k8s.extendedresources import backed_by_dra
from services.common.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    ResourceError,
    is_scalar_resource_name,
    node_allocatable,
    pod_requests,
)
from services.framework.api.events import QueueingHint


def _scaled_down(target: Pod, old: Pod, new: Pod) -> bool:
    """``isSchedulableAfterPodScaleDown``."""
    if new.metadata.uid == target.metadata.uid:
        return True
    if not new.spec.node_name:
        return False
    before, after = pod_requests(old), pod_requests(new)
    for resource, amount in pod_requests(target).items():
        relevant = resource in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(resource)
        if amount and relevant and before.get(resource, 0) > after.get(resource, 0):
            return True
    return False


def after_pod_event(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """A pod was deleted (``new`` is None) or modified."""
    if not isinstance(old, Pod):
        return QueueingHint.Queue
    if new is None:
        # A deleted pod frees room where it ran, or where it was nominated to run.
        held_room = old.spec.node_name or old.status.nominated_node_name
        return QueueingHint.Queue if held_room else QueueingHint.QueueSkip
    if not isinstance(new, Pod):
        return QueueingHint.Queue
    try:
        return QueueingHint.Queue if _scaled_down(pod, old, new) else QueueingHint.QueueSkip
    except ResourceError:
        return QueueingHint.Queue


def _fits_empty(
    requests: Mapping[str, int], allocatable: Mapping[str, int], backed: Container[str]
) -> bool:
    """``isFit``: would the pod fit the node if it ran nothing? A resource in ``backed``
    (a DeviceClass serves it) the node does not offer is left to DynamicResources."""
    if allocatable.get(PODS, 0) < 1:
        return False
    return all(
        amount <= allocatable.get(r, 0) or backed_by_dra(r, backed, allocatable)
        for r, amount in requests.items()
        if amount > 0
    )


def after_node_change(
    pod: Pod, old: object | None, new: object | None, backed: Container[str] = ()
) -> QueueingHint:
    """A node was added (``old`` is None) or its allocatable changed. ``backed``: the
    extended resources a DeviceClass serves (DRAExtendedResource)."""
    if not isinstance(new, Node):
        return QueueingHint.Queue
    try:
        requests = pod_requests(pod)
        now = node_allocatable(new)
        if not _fits_empty(requests, now, backed):
            return QueueingHint.QueueSkip
        if not isinstance(old, Node):
            return QueueingHint.Queue
        before = node_allocatable(old)
    except ResourceError:
        return QueueingHint.Queue
    # haveAnyRequestedResourcesIncreased
    if now.get(PODS, 0) > before.get(PODS, 0):
        return QueueingHint.Queue
    grew = any(
        amount > 0 and (now.get(r, 0) > before.get(r, 0) or backed_by_dra(r, backed, now))
        for r, amount in requests.items()
    )
    return QueueingHint.Queue if grew else QueueingHint.QueueSkip
