"""GangScheduling (KEP-4671, with KEP-5832's PodGroup): the pods of a native
``scheduling.k8s.io`` PodGroup with a ``gang`` policy are placed ``minCount`` at a time
or not at all. Pods name their group in ``spec.schedulingGroup.podGroupName``; a
``basic`` group, or a pod without a group, is not this plugin's business.

As kubernetes/kubernetes 1.36 (``pkg/scheduler/framework/plugins/gangscheduling``,
schedulingGroup and PodGroup, before master moved the gang check into the pod group
scheduling cycle):

- PreEnqueue (UnschedulableAndUnresolvable, so the pod waits in unschedulablePods until
  an event below): ``waiting for pod's pod group "<name>" to appear in scheduling
  queue`` while the PodGroup does not exist; ``waiting for minCount pods from a gang to
  appear in scheduling queue`` while fewer than ``minCount`` pods of the group exist.
- Reserve counts the pod as assumed; Unreserve forgets it (it no longer counts towards
  the quorum; its waiting siblings wait on until their deadline).
- Permit: a gang pod waits (``waiting for minCount pods from a gang to be waiting on
  permit``) until the group's pods assumed or assigned reach ``minCount``; then every
  waiting sibling is allowed and the pod passes. While it waits, its unscheduled
  siblings are activated. The wait ends at the group's scheduling deadline: upstream's
  ``DefaultSchedulingTimeoutDuration``, 5 minutes from the first pod that waited, a new
  deadline once the last one passed.
- Events: a pod of the same group added (pending or bound), its PodGroup added, or its
  ``minCount`` lowered.

Where ksched departs: "assumed or assigned" counts the group's pods on a node on any
replica (bound, assumed and through Permit, or waiting at Permit anywhere: the store's
waiting pods), so a gang split over scheduler replicas still binds all or nothing, as
Coscheduling's does; the deadline is kept per replica (a gang's members on one replica
share one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from contracts.k8s import Pod, SchedulingPodGroup
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
    Handle,
    PermitPlugin,
    PreEnqueuePlugin,
    ReservePlugin,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo, pod_uid

NAME: Final = "GangScheduling"
DEFAULT_SCHEDULING_TIMEOUT: Final = 5 * 60.0
"""``DefaultSchedulingTimeoutDuration``: seconds a gang waits at Permit for its quorum."""
WAITING_ON_PERMIT: Final = "waiting for minCount pods from a gang to be waiting on permit"
WAITING_FOR_MIN_COUNT: Final = "waiting for minCount pods from a gang to appear in scheduling queue"


def scheduling_group(pod: Pod) -> tuple[str, str] | None:
    """``(namespace, podGroupName)`` of the pod's native group, None without one."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return None
    return (pod.metadata.namespace or "default", group.pod_group_name)


def waiting_for_pod_group(name: str) -> str:
    return f'waiting for pod\'s pod group "{name}" to appear in scheduling queue'


class GangScheduling(PreEnqueuePlugin, ReservePlugin, PermitPlugin, EnqueueExtensions):
    name: Final = NAME

    def __init__(self, handle: Handle, *, timeout: float = DEFAULT_SCHEDULING_TIMEOUT) -> None:
        self.handle = handle
        self.timeout = timeout
        self._deadlines: dict[tuple[str, str], float] = {}
        """Group → when its pods waiting at Permit time out (``SchedulingTimeout``)."""

    def _pod_group(self, key: tuple[str, str]) -> SchedulingPodGroup | None:
        return self.handle.listers.scheduling_pod_group(*key)

    # -- PreEnqueue -------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        key = scheduling_group(pod.pod)
        if key is None:
            return SUCCESS
        group = self._pod_group(key)
        if group is None:
            return _unresolvable(waiting_for_pod_group(key[1]))
        gang = group.spec.scheduling_policy.gang
        if gang is None:
            return SUCCESS
        if self.handle.listers.scheduling_group_members.count(*key) < gang.min_count:
            return _unresolvable(WAITING_FOR_MIN_COUNT)
        return SUCCESS

    # -- Reserve / Unreserve ----------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """The pod counts as assumed from here: the group's pods list shows it on its
        node once it is through Permit or waiting there (see the module docstring)."""
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Forgotten: the reservation is gone, so the pod no longer counts."""

    # -- Permit -----------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        key = scheduling_group(pod.pod)
        if key is None:
            return SUCCESS, 0.0
        group = self._pod_group(key)
        if group is None:
            namespace, name = key
            return Status(Code.Error, (f"failed to get pod group {namespace}/{name}",)), 0.0
        gang = group.spec.scheduling_policy.gang
        if gang is None:
            return SUCCESS, 0.0
        members = self.handle.pods.pods_in_scheduling_group(*key)
        assumed_or_assigned = 1 + sum(
            1 for m in members if m.spec.node_name and pod_uid(m) != pod.uid
        )
        if assumed_or_assigned < gang.min_count:
            for sibling in members:
                if not sibling.spec.node_name and pod_uid(sibling) != pod.uid:
                    meta = sibling.metadata
                    state.pods_to_activate[f"{meta.namespace or 'default'}/{meta.name}"] = sibling
            return Status(Code.Wait, (WAITING_ON_PERMIT,)), self._scheduling_timeout(key)
        self._deadlines.pop(key, None)
        for sibling in members:  # upstream allows its assumed pods by uid, as here
            waiting = self.handle.waiting_pods.get_waiting_pod(pod_uid(sibling))
            if waiting is not None:
                waiting.allow(NAME)
        return SUCCESS, 0.0

    def _scheduling_timeout(self, key: tuple[str, str]) -> float:
        """Seconds left until the group's deadline; a new one if none or it passed."""
        now = self.handle.now()
        deadline = self._deadlines.get(key)
        if deadline is None or deadline <= now:
            deadline = self._deadlines[key] = now + self.timeout
        return deadline - now

    # -- EnqueueExtensions ------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A pod of the group added (pending or pre-bound: ``schedulingGroup`` is
        immutable, so no Pod/Update); the PodGroup added; its ``minCount`` lowered."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.UnschedulablePod, ActionType.Add), after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.AssignedPod, ActionType.Add), after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.SchedulingPodGroup, ActionType.Add),
                after_pod_group_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.SchedulingPodGroup, ActionType.Update),
                after_pod_group_updated,
            ),
        )


def after_pod_added(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterPodAdded``: a pod of the same group (namespace and name)."""
    if not isinstance(new, Pod):
        return QueueingHint.Queue
    key = scheduling_group(pod)
    same = key is not None and scheduling_group(new) == key
    return QueueingHint.Queue if same else QueueingHint.QueueSkip


def _is_pods_group(pod: Pod, group: SchedulingPodGroup) -> bool:
    meta = group.metadata
    return scheduling_group(pod) == (meta.namespace or "default", meta.name)


def after_pod_group_added(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterPodGroupAdded``: the pod's own PodGroup."""
    if not isinstance(new, SchedulingPodGroup):
        return QueueingHint.Queue
    return QueueingHint.Queue if _is_pods_group(pod, new) else QueueingHint.QueueSkip


def after_pod_group_updated(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterPodGroupUpdated``: the pod's own gang PodGroup whose
    ``minCount`` went down."""
    if not isinstance(new, SchedulingPodGroup) or not isinstance(old, SchedulingPodGroup):
        return QueueingHint.Queue
    if not _is_pods_group(pod, new):
        return QueueingHint.QueueSkip
    before, after = old.spec.scheduling_policy.gang, new.spec.scheduling_policy.gang
    if before is None or after is None or after.min_count >= before.min_count:
        return QueueingHint.QueueSkip
    return QueueingHint.Queue


def _unresolvable(message: str) -> Status:
    return Status(Code.UnschedulableAndUnresolvable, (message,))


def new(args: None, handle: Handle) -> GangScheduling:
    return GangScheduling(handle)


ENTRY: Final = PluginEntry(NAME, GangScheduling, new)
