"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) take no new pods.

Filter only. A pod that tolerates the ``node.kubernetes.io/unschedulable:NoSchedule``
taint also tolerates the cordon; any other pod is UnschedulableAndUnresolvable on a
cordoned node with "node(s) were unschedulable".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from contracts.k8s import Node, Pod
from services.common.k8s.taints import (
    NO_SCHEDULE,
    TAINT_NODE_UNSCHEDULABLE,
    TaintKey,
    tolerations_of,
    tolerations_tolerate,
)
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from services.framework.api.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    Handle,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot

NAME: Final = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"
_REJECTED: Final = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_UNSCHEDULABLE,))
_UNSCHEDULABLE_TAINT: Final = TaintKey(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)


def tolerates_unschedulable(pod: Pod) -> bool:
    """Does the pod tolerate ``node.kubernetes.io/unschedulable:NoSchedule``?"""
    return tolerations_tolerate(tolerations_of(pod.spec.tolerations), _UNSCHEDULABLE_TAINT)


class NodeUnschedulable(FilterPlugin, EnqueueExtensions):
    name: Final = NAME

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        if tolerates_unschedulable(pod.pod):
            return FilterResult.all_passed(nodes.num_nodes)
        return FilterResult.uniform(~nodes.attributes.unschedulable(), _REJECTED)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A node uncordoned or added schedulable; the pod gaining the toleration."""
        node = ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeTaint)
        pod = ClusterEvent(EventResource.Pod, ActionType.UpdatePodToleration)
        return (
            ClusterEventWithHint(node, after_node_change),
            ClusterEventWithHint(pod, after_pod_toleration_change),
        )


def after_node_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """Queue when a node is added schedulable or goes from unschedulable to schedulable."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QueueingHint.Queue
    if new.spec.unschedulable:
        return QueueingHint.QueueSkip
    return QueueingHint.Queue if old is None or old.spec.unschedulable else QueueingHint.QueueSkip


def after_pod_toleration_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """Queue when the pod itself now tolerates the unschedulable taint."""
    if not isinstance(new, Pod) or not isinstance(old, Pod):
        return QueueingHint.Queue
    if new.metadata.uid != pod.metadata.uid:
        return QueueingHint.QueueSkip
    gained = tolerates_unschedulable(new) and not tolerates_unschedulable(old)
    return QueueingHint.Queue if gained else QueueingHint.QueueSkip


def new(args: None, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()


ENTRY: Final = PluginEntry(NAME, NodeUnschedulable, new)
