"""Coscheduling (kubernetes-sigs/scheduler-plugins ``pkg/coscheduling``, as of master
903da7d, August 2026): the pods of a PodGroup (label ``scheduling.x-k8s.io/pod-group:
<name>``, group in the pod's namespace) are placed all together or not at all.

- QueueSort: higher priority first; then the group's time — when it last failed (its
  PostFilter rejection, a member's Unreserve; cleared when the gang is permitted), else
  its creation (a pod without a group: when it was first queued); then the group's
  ``namespace/name`` (a pod's own without a group); then the pod's key — so a group's
  members stay together in activeQ, and a group that just failed goes behind the pods
  that waited meanwhile. The queue runs QueueSort, the attempts run elsewhere: the
  queue's instance learns the failures from the results (``attempt_ended``).
- PreFilter (UnschedulableAndUnresolvable, so no preemption is tried): the group backed
  off recently (``podGroup <ns>/<name> failed recently``); fewer pods of the group exist
  than ``minMember``; members with scheduling gates leave fewer than ``minMember``
  schedulable (``cannot proceed due to gated pods in the same PodGroup``);
  ``minResources`` (plus ``pods: minMember``) cannot be covered by what the nodes have
  left once the group's own pods are taken out (``resource gap``). A group that passed
  the resource check is remembered ("permitted") for the wait time.
- PostFilter: a member found no node: unless enough members are assigned already (or
  the unassigned share is at most ``podGroupRejectPercentage``, default 10 %), every
  waiting sibling is rejected, the group backs off for ``podGroupBackoffSeconds`` (when
  set and every member exists), and the pod fails with ``PodGroup <ns>/<name> gets
  rejected due to Pod <pod> is unschedulable even after PostFilter``.
- Permit: a pod without a group passes; one whose group does not exist is rejected
  (``PodGroup not found``); when the members already assigned plus this one reach
  ``minMember`` every waiting sibling is allowed and the pod passes; else it waits
  (the group's ``scheduleTimeoutSeconds``, else ``permitWaitingTimeSeconds``), and
  the first member to wait asks for its siblings to be activated (``ActivateSiblings``:
  ``PodsToActivate``, so siblings parked by an earlier failure are tried again).
- Reserve does nothing; Unreserve rejects the waiting siblings (``rejection in
  Unreserve``) — not when the pod is only scheduled again within its attempt because
  another replica's reservation got the node first (``CycleState.retrying``).
  Unreserve also runs in the binder, which has no listers: the group is
  handed on as the plugin's binding state.

Where ksched departs: "assigned" counts the group's pods on a node (bound, or assumed
and through Permit, on any replica) rather than upstream's in-memory set of names, so
replicas agree; QueueSort keeps a group's members together when two groups share a
time (upstream then orders by pod name alone). PostFilter's rejection of the waiting
siblings is made by the scheduler only if no other such rejection gave room back since
its replica's view (scheduler.releases); else the pod is scheduled again on a view
with that room, as one scheduler's next cycle would have seen it (the group's backoff
and failure time this instance recorded stay: with ``podGroupBackoffSeconds`` set, the
pod then fails PreFilter on this replica until it passes).

ksched runs PostFilter itself only when the profile enables it at postFilter (there is
no other PostFilter runner yet: see the framework).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Self

import msgspec

from contracts.k8s import POD_GROUP_LABEL, Pod, PodGroup
from services.common.k8s.timestamps import parse_time
from services.common.resources import PODS, ResourceError, resource_amounts
from services.framework.api.diagnosis import Diagnosis
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from services.framework.api.interface import (
    AttemptObserver,
    BindingState,
    CycleState,
    EnqueueExtensions,
    Handle,
    PermitPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    QueueSortPlugin,
    ReservePlugin,
)
from services.framework.api.registry import ConfigError, join_path
from services.framework.api.status import SUCCESS, Code, Status, StatusError
from services.framework.api.types import PodInfo, QueuedPodInfo, pod_uid

if TYPE_CHECKING:
    from services.framework.cache.snapshot import Snapshot

NAME: Final = "Coscheduling"
DEFAULT_PERMIT_WAITING_TIME_SECONDS: Final = 60
DEFAULT_POD_GROUP_REJECT_PERCENTAGE: Final = 10
REJECTED_AFTER_POST_FILTER: Final = "is unschedulable even after PostFilter"
"""How PostFilter's message for a rejected group ends."""
GROUP_KEY: Final = f"{NAME}/group"
"""Where the binder's CycleState holds the pod's group (``namespace/name``)."""


class CoschedulingArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    permit_waiting_time_seconds: int | None = None
    """How long members wait at Permit for the rest of their group; default 60."""
    pod_group_backoff_seconds: int | None = None
    """How long a group that failed is kept from scheduling; default 0 (none)."""
    pod_group_reject_percentage: int | None = None
    """Percent (0-100) of ``minMember`` still unassigned at or below which PostFilter
    lets the later members try rather than reject the group; default 10."""

    def defaulted(self) -> Self:
        return msgspec.structs.replace(
            self,
            permit_waiting_time_seconds=(
                DEFAULT_PERMIT_WAITING_TIME_SECONDS
                if self.permit_waiting_time_seconds is None
                else self.permit_waiting_time_seconds
            ),
            pod_group_backoff_seconds=self.pod_group_backoff_seconds or 0,
            pod_group_reject_percentage=(
                DEFAULT_POD_GROUP_REJECT_PERCENTAGE
                if self.pod_group_reject_percentage is None
                else self.pod_group_reject_percentage
            ),
        )

    def validate(self, path: str) -> None:
        for field, value in (
            ("permitWaitingTimeSeconds", self.permit_waiting_time_seconds),
            ("podGroupBackoffSeconds", self.pod_group_backoff_seconds),
        ):
            if value is not None and value < 0:
                raise ConfigError(
                    join_path(path, field), f"Invalid value: {value}: must be greater than 0"
                )
        percentage = self.pod_group_reject_percentage
        if percentage is not None and not 0 <= percentage <= 100:
            raise ConfigError(
                join_path(path, "podGroupRejectPercentage"),
                f"Invalid value: {percentage}: must be between 0 and 100",
            )


def group_label(pod: Pod) -> str:
    """``util.GetPodGroupLabel``: the pod's group name, "" when it has none."""
    return pod.metadata.labels.get(POD_GROUP_LABEL, "")


def group_full_name(pod: Pod) -> str:
    """``util.GetPodGroupFullName``: ``namespace/group``, "" without a group."""
    name = group_label(pod)
    return f"{pod.metadata.namespace or 'default'}/{name}" if name else ""


@dataclass(frozen=True, slots=True)
class _Group:
    name: str

    def clone(self) -> _Group:
        return self


class Coscheduling(
    QueueSortPlugin,
    AttemptObserver,
    PreFilterPlugin,
    PostFilterPlugin,
    PermitPlugin,
    ReservePlugin,
    EnqueueExtensions,
    BindingState,
):
    name: Final = NAME

    def __init__(self, args: CoschedulingArgs, handle: Handle) -> None:
        self.handle = handle
        self.schedule_timeout = float(
            args.permit_waiting_time_seconds or DEFAULT_PERMIT_WAITING_TIME_SECONDS
        )
        self.backoff = float(args.pod_group_backoff_seconds or 0)
        percentage = args.pod_group_reject_percentage
        self.reject_threshold = (
            DEFAULT_POD_GROUP_REJECT_PERCENTAGE if percentage is None else percentage
        ) / 100
        self._failed_at: dict[str, float] = {}
        """Group full name → when it last failed (PostFilter rejected it, or a member's
        Unreserve ran): QueueSort orders the group by that instead of its creation."""
        self._backed_off: dict[str, float] = {}
        """Group full name → until when it is backed off."""
        self._permitted: dict[str, float] = {}
        """Group full name → until when its minResources check stays passed."""

    # -- the group ------------------------------------------------------------------

    def pod_group(self, pod: Pod) -> tuple[str, PodGroup | None]:
        """``GetPodGroup``: the group's full name ("" without one) and the PodGroup
        (None when the pod has no group or it does not exist)."""
        name = group_label(pod)
        if not name:
            return "", None
        namespace = pod.metadata.namespace or "default"
        return f"{namespace}/{name}", self.handle.listers.pod_group(namespace, name)

    def assigned(self, group: PodGroup) -> int:
        """``CalculateAssignedPods``: members on a node (bound, or assumed earlier)."""
        meta = group.metadata
        pods = self.handle.pods.pods_in_group(meta.namespace or "default", meta.name)
        return sum(1 for p in pods if p.spec.node_name)

    def _siblings(self, namespace: str, group: str) -> list[Any]:
        found: list[Any] = []

        def collect(waiting: Any) -> None:
            pod = waiting.get_pod()
            if (pod.metadata.namespace or "default") == namespace and group_label(pod) == group:
                found.append(waiting)

        self.handle.waiting_pods.iterate_over_waiting_pods(collect)
        return found

    def _reject_siblings(self, full_name: str, message: str) -> None:
        namespace, _, group = full_name.partition("/")
        for waiting in self._siblings(namespace, group):
            waiting.reject(NAME, message)

    # -- QueueSort --------------------------------------------------------------------

    def sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        pod = info.pod_info.pod
        full_name, group = self.pod_group(pod)
        failed = self._failed_at.get(full_name) if full_name else None
        if group is not None:
            created = (
                parse_time(group.metadata.creation_timestamp) or 0.0 if failed is None else failed
            )
            key = full_name
        else:
            created = (
                info.initial_attempt_timestamp
                if info.initial_attempt_timestamp is not None
                else info.timestamp
            )
            key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
        return (-info.pod_info.priority, created, key, info.pod_info.key)

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.sort_key(a) < self.sort_key(b)

    # -- PreFilter --------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        full_name, group = self.pod_group(pod.pod)
        if group is None:
            return None, SUCCESS
        state.write(GROUP_KEY, _Group(full_name))
        now = self.handle.now()
        if self._backed_off.get(full_name, -1.0) > now:
            return None, _unresolvable(f"podGroup {full_name} failed recently")
        namespace, _, name = full_name.partition("/")
        members = self.handle.pods.pods_in_group(namespace, name)
        min_member = group.spec.min_member
        gap = min_member - len(members)
        if gap > 0:
            return None, _unresolvable(
                f"pre-filter pod {pod.pod.metadata.name} cannot find enough sibling pods, "
                f"current pods number: {len(members)}, minMember of group: {min_member}"
            )
        for member in members:
            gap += 1 if member.spec.scheduling_gates else 0
            if gap > 0:
                return None, _unresolvable(
                    f"pre-filter pod {pod.pod.metadata.name} cannot proceed due to gated pods "
                    "in the same PodGroup"
                )
        if not group.spec.min_resources or self._permitted.get(full_name, -1.0) > now:
            return None, SUCCESS
        lacking = self._resource_gap(group, full_name, nodes)
        if lacking:
            shown = " ".join(f"{k}:{v}" for k, v in sorted(lacking.items()))
            return None, _unresolvable(f"resource gap: map[{shown}]")
        self._permitted[full_name] = now + self.schedule_timeout
        return None, SUCCESS

    def _resource_gap(self, group: PodGroup, full_name: str, nodes: Snapshot) -> dict[str, int]:
        """``CheckClusterResource``: what ``minResources`` (with ``pods: minMember``)
        still lacks after taking what the nodes have left, node by node, the group's own
        assigned pods not counted as using anything."""
        try:
            wanted = resource_amounts(group.spec.min_resources, "spec.minResources")
        except ResourceError as err:
            raise StatusError(f"PodGroup {full_name}: {err}") from None
        wanted[PODS] = group.spec.min_member
        free = nodes.allocatable - nodes.requested
        namespace, _, name = full_name.partition("/")
        for member in self.handle.pods.pods_in_group(namespace, name):
            row = nodes.index.get(member.spec.node_name or "")
            if row is None:
                continue
            info = PodInfo.of(member)
            for resource, amount in info.requests.items():
                column = nodes.resources.get(resource)
                if column is not None:
                    free[row, column] += amount
            free[row, nodes.resources[PODS]] += 1
        for row in range(nodes.num_nodes):
            for resource in list(wanted):
                column = nodes.resources.get(resource)
                left = wanted[resource] - (int(free[row, column]) if column is not None else 0)
                if left <= 0:
                    del wanted[resource]
                else:
                    wanted[resource] = left
            if not wanted:
                return {}
        return wanted

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # -- PostFilter -------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        full_name, group = self.pod_group(pod.pod)
        if group is None:
            return PostFilterResult(), Status(Code.Unschedulable, ("can not find pod group",))
        assigned = self.assigned(group)
        min_member = group.spec.min_member
        if assigned >= min_member:
            return PostFilterResult(), Status(Code.Unschedulable)
        if min_member and (min_member - assigned) / min_member <= self.reject_threshold:
            return PostFilterResult(), Status(Code.Unschedulable)
        self._reject_siblings(full_name, "optimistic rejection in PostFilter")
        if self.backoff > 0:
            namespace, _, name = full_name.partition("/")
            if len(self.handle.pods.pods_in_group(namespace, name)) >= min_member:
                self._backed_off[full_name] = self.handle.now() + self.backoff
        self._permitted.pop(full_name, None)
        self._failed_at[full_name] = self.handle.now()
        message = (
            f"PodGroup {full_name} gets rejected due to Pod {pod.pod.metadata.name} "
            f"{REJECTED_AFTER_POST_FILTER}"
        )
        return PostFilterResult(), Status(Code.Unschedulable, (message,))

    # -- Permit -----------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        full_name, group = self.pod_group(pod.pod)
        if not full_name:
            return SUCCESS, 0.0
        if group is None:
            return Status(Code.Unschedulable, ("PodGroup not found",)), 0.0
        state.write(GROUP_KEY, _Group(full_name))
        namespace, _, name = full_name.partition("/")
        assigned = self.assigned(group)
        if assigned + 1 >= group.spec.min_member:
            self._failed_at.pop(full_name, None)
            for waiting in self._siblings(namespace, name):
                waiting.allow(NAME)
            return SUCCESS, 0.0
        if assigned == 0:  # the first member to wait: its siblings are tried again now
            for sibling in self.handle.pods.pods_in_group(namespace, name):
                if pod_uid(sibling) != pod.uid:
                    key = f"{sibling.metadata.namespace or 'default'}/{sibling.metadata.name}"
                    state.pods_to_activate[key] = sibling
        wait = group.spec.schedule_timeout_seconds or self.schedule_timeout
        return Status(Code.Wait), float(wait)

    # -- Reserve / Unreserve ----------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        if state.retrying:  # another replica's reservation came first: tried again now
            return
        full_name, group = self.pod_group(pod.pod)
        if group is None:
            try:  # the binder: no listers, the group was handed on
                full_name = state.read(GROUP_KEY, _Group).name
            except StatusError:
                return
        self._reject_siblings(full_name, "rejection in Unreserve")
        self._permitted.pop(full_name, None)
        self._failed_at[full_name] = self.handle.now()

    # -- AttemptObserver (the queue's instance) ---------------------------------------

    def attempt_ended(self, pod: Pod, outcome: str, message: str, forgotten: bool) -> None:
        """What the other instances did, as the queue learns it: a member bound clears
        the group's failure (Permit allowed the gang); one that failed after its
        Unreserve ran, or with PostFilter's rejection of the group, marks it."""
        full_name = group_full_name(pod)
        if not full_name:
            return
        if outcome == "bound":
            self._failed_at.pop(full_name, None)
        elif forgotten or message.endswith(REJECTED_AFTER_POST_FILTER):
            self._failed_at[full_name] = self.handle.now()

    # -- BindingState -----------------------------------------------------------------

    def binding_state(self, state: CycleState) -> bytes | None:
        group = state_group(state)
        return msgspec.json.encode(group) if group else None

    def restore_binding_state(self, state: CycleState, data: bytes) -> None:
        state.write(GROUP_KEY, _Group(msgspec.json.decode(data, type=str)))

    # -- EnqueueExtensions ------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.Add)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PodGroup, ActionType.Add | ActionType.Update)
            ),
        )


def state_group(state: CycleState) -> str:
    try:
        return state.read(GROUP_KEY, _Group).name
    except StatusError:
        return ""


def _unresolvable(message: str) -> Status:
    return Status(Code.UnschedulableAndUnresolvable, (message,))


def new(args: CoschedulingArgs, handle: Handle) -> Coscheduling:
    return Coscheduling(args, handle)
