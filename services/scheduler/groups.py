"""The pods of each pod group, for Coscheduling and GangScheduling (the Handle's
``PodLister``).

Fed the same log entries as the snapshot (every pod labelled
``scheduling.x-k8s.io/pod-group``, and every pod with a native ``spec.schedulingGroup``,
pending or bound, but not Succeeded or Failed: upstream's scheduler lists pods through an
informer whose field selector leaves terminal pods out); a pod this replica assumed shows
on its node once it has been through Permit, as upstream's snapshot shows the pods
assumed by earlier cycles but not the one being permitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from contracts.events import LogEntry, PodEntry
from contracts.k8s import POD_GROUP_LABEL, TERMINAL_PHASES, Pod
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
        self._groups: dict[tuple[str, str, str], dict[str, Pod]] = {}
        """(API group, namespace, group name) → the members by uid."""
        self._group_of: dict[str, tuple[str, str, str]] = {}

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
        key = _group_key(pod)
        if key is None or pod.status.phase in TERMINAL_PHASES:
            self._drop(uid)
            return
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
        return self._members((_X_K8S, namespace, group))

    def pods_in_scheduling_group(self, namespace: str, group: str) -> list[Pod]:
        return self._members((_NATIVE, namespace, group))

    def _members(self, key: tuple[str, str, str]) -> list[Pod]:
        members = self._groups.get(key, {})
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


_X_K8S = "scheduling.x-k8s.io"
_NATIVE = "scheduling.k8s.io"


def _group_key(pod: Pod) -> tuple[str, str, str] | None:
    """The pod's group: its native ``spec.schedulingGroup``, else its
    ``scheduling.x-k8s.io/pod-group`` label (None: neither)."""
    namespace = pod.metadata.namespace or "default"
    native = pod.spec.scheduling_group
    if native is not None and native.pod_group_name:
        return (_NATIVE, namespace, native.pod_group_name)
    group = pod.metadata.labels.get(POD_GROUP_LABEL)
    return (_X_K8S, namespace, group) if group else None
