"""What an object change means to the queue: upstream's ``framework/events.go``.

A Pod or Node update becomes the most specific ``ClusterEvent`` s it can
(``PodSchedulingPropertiesChange``, ``NodeSchedulingPropertiesChange``); the queue asks
only the plugins that registered those. Also here: the queue's special events and the
metric label of an event, spelled as upstream's ``ClusterEvent.Label()``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Final

from contracts.k8s import Node, Pod
from services.common.resources import ResourceError, node_allocatable, pod_requests
from services.framework.api.events import ActionType, ClusterEvent, EventResource

A, R = ActionType, EventResource

# Labels of the queue's own moves (``framework/events.go``).
SCHEDULE_ATTEMPT_FAILURE: Final = "ScheduleAttemptFailure"
BACKOFF_COMPLETE: Final = "BackoffComplete"
POP_FROM_BACKOFF_Q: Final = "PopFromBackoffQ"
FORCE_ACTIVATE: Final = "ForceActivate"
UNSCHEDULABLE_TIMEOUT: Final = "UnschedulableTimeout"

ASSIGNED_POD_ADD: Final = ClusterEvent(R.AssignedPod, A.Add)
ASSIGNED_POD_DELETE: Final = ClusterEvent(R.AssignedPod, A.Delete)
UNSCHEDULED_POD_ADD: Final = ClusterEvent(R.UnschedulablePod, A.Add)
UNSCHEDULED_POD_UPDATE: Final = ClusterEvent(R.UnschedulablePod, A.Update)
NODE_ADD: Final = ClusterEvent(R.Node, A.Add)
NODE_DELETE: Final = ClusterEvent(R.Node, A.Delete)
EVENT_UNSCHEDULABLE_TIMEOUT: Final = ClusterEvent(R.WildCard, A.All, UNSCHEDULABLE_TIMEOUT)
"""The leftover flush: a wildcard event, so it moves every pod it is given."""
EVENT_FORCE_ACTIVATE: Final = ClusterEvent(R.WildCard, A.All, FORCE_ACTIVATE)


@functools.cache
def label(event: ClusterEvent) -> str:
    """``NodeAdd``, ``AssignedPodDelete``, ``UnschedulablePodUpdate``,
    ``NodeUpdateNodeLabel``…: upstream's ``ClusterEvent.Label()`` (kept per event: the
    events are a small fixed set, and a queueing hint's metric asks per call)."""
    if event.custom_label:
        return event.custom_label
    resource = str(event.resource)
    action = event.action_type
    name = "Update" if action in (A.UpdateOther, A.Update) else action.name
    return f"{resource}{name}"


@functools.lru_cache(maxsize=4096)
def match_any(incoming: ClusterEvent, registered: tuple[ClusterEvent, ...]) -> bool:
    """``MatchAnyClusterEvent`` (kept per pair: a queue asks it for every gated pod on
    every event, and the events and registrations are a small fixed set)."""
    return any(r.matches(incoming) for r in registered)


# -- pods ------------------------------------------------------------------------------


def _labels_changed(new: Pod, old: Pod) -> ActionType | None:
    return A.UpdatePodLabel if new.metadata.labels != old.metadata.labels else None


def same_requests(a: Pod, b: Pod) -> bool:
    """Whether the fields the pod's requests are computed from are the same."""
    return (
        a.spec.containers == b.spec.containers
        and a.spec.init_containers == b.spec.init_containers
        and a.spec.overhead == b.spec.overhead
    )


def _scaled_down(new: Pod, old: Pod) -> ActionType | None:
    """A request removed or lowered (``extractPodScaleDown``)."""
    if same_requests(new, old):
        return None
    try:
        before, after = pod_requests(old), pod_requests(new)
    except ResourceError:
        return None
    for resource, amount in before.items():
        if resource not in after or after[resource] < amount:
            return A.UpdatePodScaleDown
    return None


def _gates_eliminated(new: Pod, old: Pod) -> ActionType | None:
    if not new.spec.scheduling_gates and old.spec.scheduling_gates:
        return A.UpdatePodSchedulingGatesEliminated
    return None


def _tolerations_changed(new: Pod, old: Pod) -> ActionType | None:
    # The API only lets tolerations be added, so a different count is any change.
    if len(new.spec.tolerations) != len(old.spec.tolerations):
        return A.UpdatePodToleration
    return None


def _generated_claim_changed(new: Pod, old: Pod) -> ActionType | None:
    """``extractPodGeneratedResourceClaimChange``: ``status.resourceClaimStatuses``
    differs (``resourceclaim.PodStatusEqual``: same entries, names and claim names, in
    order), as when a claim was generated from a template for the pod."""
    if new.status.resource_claim_statuses != old.status.resource_claim_statuses:
        return A.UpdatePodGeneratedResourceClaim
    return None


_POD_EXTRACTORS: Final[tuple[Callable[[Pod, Pod], ActionType | None], ...]] = (
    _labels_changed,
    _scaled_down,
    _gates_eliminated,
    _tolerations_changed,
    _generated_claim_changed,  # upstream: with DynamicResourceAllocation (GA, locked on)
)


def pod_scheduling_properties_change(new: Pod, old: Pod) -> list[ClusterEvent]:
    """``PodSchedulingPropertiesChange``: one event per specific change, on
    ``AssignedPod`` or ``UnschedulablePod`` after the new pod's nodeName; a generic
    ``Update`` when none applies (status, annotations, other spec fields)."""
    resource = R.AssignedPod if new.spec.node_name else R.UnschedulablePod
    events = [
        ClusterEvent(resource, action)
        for extract in _POD_EXTRACTORS
        if (action := extract(new, old)) is not None
    ]
    return events or [ClusterEvent(resource, A.Update)]


# -- nodes -----------------------------------------------------------------------------


def _uncordoned(new: Node, old: Node) -> ActionType | None:
    # Upstream reports spec.unschedulable turning off as a taint update.
    if new.spec.unschedulable != old.spec.unschedulable and not new.spec.unschedulable:
        return A.UpdateNodeTaint
    return None


def _allocatable(node: Node) -> Mapping[str, object]:
    try:
        return node_allocatable(node)
    except ResourceError:
        return node.status.allocatable


def _allocatable_changed(new: Node, old: Node) -> ActionType | None:
    if _allocatable(new) != _allocatable(old):
        return A.UpdateNodeAllocatable
    return None


def _node_labels_changed(new: Node, old: Node) -> ActionType | None:
    return A.UpdateNodeLabel if new.metadata.labels != old.metadata.labels else None


def _taints_changed(new: Node, old: Node) -> ActionType | None:
    return A.UpdateNodeTaint if new.spec.taints != old.spec.taints else None


def _conditions_changed(new: Node, old: Node) -> ActionType | None:
    """Only a condition's status counts, not its reason, message or times."""
    before = {c.type: c.status for c in old.status.conditions}
    after = {c.type: c.status for c in new.status.conditions}
    return A.UpdateNodeCondition if before != after else None


def _annotations_changed(new: Node, old: Node) -> ActionType | None:
    if new.metadata.annotations != old.metadata.annotations:
        return A.UpdateNodeAnnotation
    return None


_NODE_EXTRACTORS: Final[tuple[Callable[[Node, Node], ActionType | None], ...]] = (
    _uncordoned,
    _allocatable_changed,
    _node_labels_changed,
    _taints_changed,
    _conditions_changed,
    _annotations_changed,
)


def node_scheduling_properties_change(new: Node, old: Node) -> list[ClusterEvent]:
    """``NodeSchedulingPropertiesChange``: one event per change that can matter; none
    for a heartbeat that changed nothing else."""
    actions: list[ActionType] = []
    for extract in _NODE_EXTRACTORS:
        action = extract(new, old)
        if action is not None and action not in actions:
            actions.append(action)
    return [ClusterEvent(R.Node, action) for action in actions]
