"""The native PodGroups (``scheduling.k8s.io``) the queue follows, to publish each
group's scheduling condition on ``ksched.decisions`` as ``podgroup.<namespace>`` when it
changes, as kube-scheduler patches the PodGroup's status:

- ``True`` (reason ``Scheduled``) once ``minCount`` members (one for a basic group) are
  bound; terminal, as upstream's: later evictions do not turn it back;
- ``False`` (reason ``Unschedulable``, the attempt's message) when a member's attempt
  fails before that.

The condition's type follows the group's version: ``PodGroupScheduled`` (v1alpha2),
``PodGroupInitiallyScheduled`` (v1beta1). Nothing is published for a group nothing has
happened to yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from contracts.events import LogEntry, PodEntry, SchedulingPodGroupEntry
from contracts.k8s import Condition, Pod, SchedulingPodGroup, SchedulingPodGroupStatus

SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"


def _key(namespace: str | None, name: str) -> str:
    return f"{namespace or 'default'}/{name}"


def _group_key(pod: Pod) -> str | None:
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return None
    return _key(pod.metadata.namespace, group.pod_group_name)


def scheduled_condition(
    group: SchedulingPodGroup, bound: int, failure: str | None, now: str
) -> Condition | None:
    """The group's scheduling condition, given its bound members and the message of a
    member's last failed attempt (None: no failure since); None: nothing to say yet."""
    kind = group.scheduled_condition_type()
    previous = next((c for c in group.status.conditions if c.type == kind), None)
    if previous is not None and previous.status == "True":
        return previous
    gang = group.spec.scheduling_policy.gang
    need = gang.min_count if gang is not None else 1
    if bound >= need:
        return Condition(type=kind, status="True", reason=SCHEDULED, last_transition_time=now)
    if failure is not None:
        since = now
        if previous is not None and previous.status == "False":
            since = previous.last_transition_time or now
        return Condition(
            type=kind,
            status="False",
            reason=UNSCHEDULABLE,
            message=failure,
            last_transition_time=since,
        )
    return previous


class NativePodGroups:
    def __init__(self, now: Callable[[], str]) -> None:
        """``now``: the clock as RFC 3339 text, for ``lastTransitionTime``."""
        self._now = now
        self._groups: dict[str, SchedulingPodGroup] = {}
        self._members: dict[str, dict[str, Pod]] = {}
        self._member_of: dict[str, str] = {}
        self._failures: dict[str, str] = {}
        self._published: dict[str, Condition] = {}
        self._touched: set[str] = set()

    def load(self, groups: Iterable[SchedulingPodGroup], pods: Iterable[Pod]) -> None:
        self._groups = {_key(g.metadata.namespace, g.metadata.name): g for g in groups}
        self._members, self._member_of = {}, {}
        for pod in pods:
            self._put(pod)
        self._touched = set(self._groups)

    def apply(self, entry: LogEntry) -> None:
        match entry:
            case SchedulingPodGroupEntry(object=group, type=type_):
                key = _key(group.metadata.namespace, group.metadata.name)
                if type_ == "DELETED":
                    self._groups.pop(key, None)
                    self._published.pop(key, None)
                    self._failures.pop(key, None)
                else:
                    self._groups[key] = group
                    self._touched.add(key)
            case PodEntry(object=pod, type=type_):
                if type_ == "DELETED":
                    self._drop(pod.metadata.uid)
                elif _group_key(pod) is not None or pod.metadata.uid in self._member_of:
                    self._put(pod)

    def attempt_failed(self, pod: Pod, message: str) -> None:
        """A member's attempt ended unschedulable (or in error) with ``message``."""
        key = _group_key(pod)
        if key is not None:
            self._failures[key] = message
            self._touched.add(key)

    def _put(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        self._drop(uid)
        key = _group_key(pod)
        if key is not None:
            self._members.setdefault(key, {})[uid] = pod
            self._member_of[uid] = key
            self._touched.add(key)

    def _drop(self, uid: str) -> None:
        key = self._member_of.pop(uid, None)
        if key is not None:
            self._members.get(key, {}).pop(uid, None)
            self._touched.add(key)

    def changed(self) -> list[SchedulingPodGroup]:
        """The groups whose condition changed since last asked, with that status."""
        out: list[SchedulingPodGroup] = []
        now = self._now()
        for key in sorted(self._touched):
            group = self._groups.get(key)
            if group is None:
                continue
            bound = sum(1 for p in self._members.get(key, {}).values() if p.spec.node_name)
            published = self._published.get(key)
            if published is not None:
                group = _with_condition(group, published)
            condition = scheduled_condition(group, bound, self._failures.get(key), now)
            if condition is None or _same(condition, published):
                continue
            self._published[key] = condition
            out.append(_with_condition(group, condition))
        self._touched.clear()
        return out


def _same(a: Condition, b: Condition | None) -> bool:
    return b is not None and (a.status, a.reason, a.message) == (b.status, b.reason, b.message)


def _with_condition(group: SchedulingPodGroup, condition: Condition) -> SchedulingPodGroup:
    others = [c for c in group.status.conditions if c.type != condition.type]
    status = SchedulingPodGroupStatus(conditions=[*others, condition])
    return msgspec.structs.replace(group, status=status)
