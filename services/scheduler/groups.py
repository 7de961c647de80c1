"""The pods of each pod group, for Coscheduling (the Handle's ``PodLister``).

Fed the same log entries as the snapshot (every pod labelled
``scheduling.x-k8s.io/pod-group``, pending or bound); a pod this replica assumed shows
on its node once it has been through Permit, as upstream's snapshot shows the pods
assumed by earlier cycles but not the one being permitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from contracts.events import LogEntry, PodEntry
from contracts.k8s import POD_GROUP_LABEL, Pod
from services.framework.api.types import pod_uid


class GroupPods:
    def __init__(
        self,
        assumed_node: Callable[[str], str | None],
        excluded: Callable[[], set[str]],
        waiting_node: Callable[[str], str | None] = lambda _uid: None,
    ):
        """``assumed_node(uid)``: where this replica assumed the pod (None: nowhere);
        ``excluded()``: the pods assumed but not yet through Permit; ``waiting_node(uid)``:
        where the pod waits at Permit on any replica (the store's waiting pods), so a
        gang split over replicas counts its members reserved elsewhere."""
        self._assumed_node = assumed_node
        self._excluded = excluded
        self._waiting_node = waiting_node
        self._groups: dict[tuple[str, str], dict[str, Pod]] = {}
        self._group_of: dict[str, tuple[str, str]] = {}

    def load(self, pods: Iterable[Pod]) -> None:
        self._groups, self._group_of = {}, {}
        for pod in pods:
            self._put(pod)

    def apply(self, events: Iterable[LogEntry]) -> None:
        for event in events:
            if isinstance(event, PodEntry):
                if event.type == "DELETED":
                    self._drop(pod_uid(event.object))
                else:
                    self._put(event.object)

    def _put(self, pod: Pod) -> None:
        uid = pod_uid(pod)
        group = pod.metadata.labels.get(POD_GROUP_LABEL)
        if not group:
            self._drop(uid)
            return
        key = (pod.metadata.namespace or "default", group)
        if self._group_of.get(uid, key) != key:
            self._drop(uid)
        self._group_of[uid] = key
        self._groups.setdefault(key, {})[uid] = pod

    def _drop(self, uid: str) -> None:
        key = self._group_of.pop(uid, None)
        if key is not None:
            members = self._groups.get(key, {})
            members.pop(uid, None)
            if not members:
                self._groups.pop(key, None)

    def pods_in_group(self, namespace: str, group: str) -> list[Pod]:
        members = self._groups.get((namespace, group), {})
        excluded = self._excluded()
        out: list[Pod] = []
        for uid, pod in members.items():
            if not pod.spec.node_name and uid not in excluded:
                node = self._assumed_node(uid) or self._waiting_node(uid)
                if node is not None:
                    pod = msgspec.structs.replace(
                        pod, spec=msgspec.structs.replace(pod.spec, node_name=node)
                    )
            out.append(pod)
        return out
