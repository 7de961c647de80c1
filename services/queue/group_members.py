"""Which pods belong to which group, for the queue's two kinds of pod group (the
scheduler-plugins PodGroup of :mod:`.podgroups`, the native ``scheduling.k8s.io`` one
of :mod:`.native_podgroups`): the groups by ``namespace/name``, each group's members by
UID, and which groups were touched since their status was last worked out."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from contracts.k8s import ObjectMeta, Pod

G = TypeVar("G")
S = TypeVar("S")


def group_key(namespace: str | None, name: str) -> str:
    return f"{namespace or 'default'}/{name}"


class GroupMembers(Generic[G, S]):
    """Groups of type ``G`` whose published status is of type ``S``; ``member_of`` names
    the group a pod asks for (its key), or None."""

    def __init__(self, member_of: Callable[[Pod], str | None]) -> None:
        self._group_of = member_of
        self.groups: dict[str, G] = {}
        self.members: dict[str, dict[str, Pod]] = {}
        self.published: dict[str, S] = {}
        self.touched: set[str] = set()
        self._member_of: dict[str, str] = {}

    def load(self, groups: Iterable[tuple[ObjectMeta, G]], pods: Iterable[Pod]) -> None:
        """Replace everything (after a resync); every group is looked at again."""
        self.groups = {group_key(m.namespace, m.name): g for m, g in groups}
        self.members, self._member_of = {}, {}
        for pod in pods:
            self.put(pod)
        self.touched = set(self.groups)

    def set_group(self, meta: ObjectMeta, group: G, deleted: bool) -> str:
        key = group_key(meta.namespace, meta.name)
        if deleted:
            self.groups.pop(key, None)
            self.published.pop(key, None)
        else:
            self.groups[key] = group
            self.touched.add(key)
        return key

    def set_pod(self, pod: Pod, deleted: bool) -> None:
        if deleted:
            self.drop(pod.metadata.uid)
        elif self._group_of(pod) is not None or pod.metadata.uid in self._member_of:
            self.put(pod)

    def put(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        self.drop(uid)
        key = self._group_of(pod)
        if key is not None:
            self.members.setdefault(key, {})[uid] = pod
            self._member_of[uid] = key
            self.touched.add(key)

    def drop(self, uid: str) -> None:
        key = self._member_of.pop(uid, None)
        if key is not None:
            self.members.get(key, {}).pop(uid, None)
            self.touched.add(key)

    def take_touched(self) -> list[tuple[str, G]]:
        """The touched groups that still exist, by key, and forget the touches."""
        out = [(key, self.groups[key]) for key in sorted(self.touched) if key in self.groups]
        self.touched.clear()
        return out
