"""The PodGroups the queue follows and their members, to publish each group's status
(``services.common.podgroups``) when it changes, as the scheduler-plugins controller
would write it."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from contracts.events import LogEntry, PodEntry, PodGroupEntry
from contracts.k8s import POD_GROUP_LABEL, Pod, PodGroup, PodGroupStatus
from services.common.podgroups import pod_group_status


def _key(namespace: str | None, name: str) -> str:
    return f"{namespace or 'default'}/{name}"


class PodGroups:
    def __init__(self) -> None:
        self._groups: dict[str, PodGroup] = {}
        self._members: dict[str, dict[str, Pod]] = {}
        self._member_of: dict[str, str] = {}
        self._published: dict[str, PodGroupStatus] = {}
        self._touched: set[str] = set()

    def load(self, groups: Iterable[PodGroup], pods: Iterable[Pod]) -> None:
        """Replace everything (after a resync); every group is looked at again."""
        self._groups = {_key(g.metadata.namespace, g.metadata.name): g for g in groups}
        self._members, self._member_of = {}, {}
        for pod in pods:
            self._put(pod)
        self._touched = set(self._groups)

    def apply(self, entry: LogEntry) -> None:
        match entry:
            case PodGroupEntry(object=group, type=type_):
                key = _key(group.metadata.namespace, group.metadata.name)
                if type_ == "DELETED":
                    self._groups.pop(key, None)
                    self._published.pop(key, None)
                else:
                    self._groups[key] = group
                    self._touched.add(key)
            case PodEntry(object=pod, type=type_):
                if type_ == "DELETED":
                    self._drop(pod.metadata.uid)
                else:
                    self._put(pod)

    def _put(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        name = pod.metadata.labels.get(POD_GROUP_LABEL)
        self._drop(uid)
        if name:
            key = _key(pod.metadata.namespace, name)
            self._members.setdefault(key, {})[uid] = pod
            self._member_of[uid] = key
            self._touched.add(key)

    def _drop(self, uid: str) -> None:
        key = self._member_of.pop(uid, None)
        if key is not None:
            self._members.get(key, {}).pop(uid, None)
            self._touched.add(key)

    def changed(self) -> list[PodGroup]:
        """The groups whose status changed since last asked, with that status."""
        out: list[PodGroup] = []
        for key in sorted(self._touched):
            group = self._groups.get(key)
            if group is None:
                continue
            status = pod_group_status(group, self._members.get(key, {}).values())
            if self._published.get(key) != status:
                self._published[key] = status
                out.append(msgspec.structs.replace(group, status=status))
        self._touched.clear()
        return out
