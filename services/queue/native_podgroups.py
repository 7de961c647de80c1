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
from services.queue.group_members import GroupMembers, group_key
from services.queue.pods import native_group_name

SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"


def _group_key(pod: Pod) -> str | None:
    name = native_group_name(pod)
    return group_key(pod.metadata.namespace, name) if name else None


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
        self._tracked: GroupMembers[SchedulingPodGroup, Condition] = GroupMembers(_group_key)
        self._failures: dict[str, str] = {}

    def load(self, groups: Iterable[SchedulingPodGroup], pods: Iterable[Pod]) -> None:
        self._tracked.load(((g.metadata, g) for g in groups), pods)

    def apply(self, entry: LogEntry) -> None:
        match entry:
            case SchedulingPodGroupEntry(object=group, type=type_):
                deleted = type_ == "DELETED"
                key = self._tracked.set_group(group.metadata, group, deleted)
                if deleted:
                    self._failures.pop(key, None)
            case PodEntry(object=pod, type=type_):
                self._tracked.set_pod(pod, type_ == "DELETED")

    def attempt_failed(self, pod: Pod, message: str) -> None:
        """A member's attempt ended unschedulable (or in error) with ``message``."""
        key = _group_key(pod)
        if key is not None:
            self._failures[key] = message
            self._tracked.touched.add(key)

    def changed(self) -> list[SchedulingPodGroup]:
        """The groups whose condition changed since last asked, with that status."""
        out: list[SchedulingPodGroup] = []
        now = self._now()
        tracked = self._tracked
        for key, group in tracked.take_touched():
            bound = sum(1 for p in tracked.members.get(key, {}).values() if p.spec.node_name)
            published = tracked.published.get(key)
            if published is not None:
                group = _with_condition(group, published)
            condition = scheduled_condition(group, bound, self._failures.get(key), now)
            if condition is None or _same(condition, published):
                continue
            tracked.published[key] = condition
            out.append(_with_condition(group, condition))
        return out


def _same(a: Condition, b: Condition | None) -> bool:
    return b is not None and (a.status, a.reason, a.message) == (b.status, b.reason, b.message)


def _with_condition(group: SchedulingPodGroup, condition: Condition) -> SchedulingPodGroup:
    others = [c for c in group.status.conditions if c.type != condition.type]
    status = SchedulingPodGroupStatus(conditions=[*others, condition])
    return msgspec.structs.replace(group, status=status)
