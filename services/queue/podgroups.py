"""The PodGroups the queue follows and their members, to publish each group's status
(``services.common.podgroups``) when it changes, as the scheduler-plugins controller
would write it."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from contracts import topology
from contracts.events import LogEntry, PodEntry, PodGroupEntry
from contracts.k8s import Pod, PodGroup, PodGroupStatus, SchedulingPodGroup
from services.common.bus import Message
from services.common.podgroups import pod_group_status
from services.queue.group_members import GroupMembers, group_key
from services.queue.pods import pod_group_name


def _member_of(pod: Pod) -> str | None:
    name = pod_group_name(pod)
    return group_key(pod.metadata.namespace, name) if name else None


class PodGroups:
    def __init__(self) -> None:
        self._tracked: GroupMembers[PodGroup, PodGroupStatus] = GroupMembers(_member_of)

    def load(self, groups: Iterable[PodGroup], pods: Iterable[Pod]) -> None:
        """Replace everything (after a resync); every group is looked at again."""
        self._tracked.load(((g.metadata, g) for g in groups), pods)

    def apply(self, entry: LogEntry) -> None:
        match entry:
            case PodGroupEntry(object=group, type=type_):
                self._tracked.set_group(group.metadata, group, type_ == "DELETED")
            case PodEntry(object=pod, type=type_):
                self._tracked.set_pod(pod, type_ == "DELETED")

    def changed(self) -> list[PodGroup]:
        """The groups whose status changed since last asked, with that status."""
        out: list[PodGroup] = []
        tracked = self._tracked
        for key, group in tracked.take_touched():
            status = pod_group_status(group, tracked.members.get(key, {}).values())
            if tracked.published.get(key) != status:
                tracked.published[key] = status
                out.append(msgspec.structs.replace(group, status=status))
        return out


def group_messages(changed: Iterable[PodGroup | SchedulingPodGroup]) -> list[Message]:
    """The status of each changed PodGroup, on ``ksched.decisions`` as
    ``podgroup.<namespace>``."""
    encode = msgspec.json.encode
    return [
        Message(
            topology.DECISIONS.name,
            topology.decision_key("podgroup", group.metadata.namespace),
            encode(group),
        )
        for group in changed
    ]
