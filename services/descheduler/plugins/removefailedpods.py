"""RemoveFailedPods (descheduler ``removefailedpods``): evict Failed pods, node by
node, that are older than ``minPodLifetimeSeconds`` (default 3600) and match the
reasons, exit codes and owner kinds asked for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector, Node, Pod
from services.descheduler.api import DeschedulePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import evict_all, evictable_filter
from services.descheduler.podutil import (
    Namespaces,
    check_pod_selection,
    container_states,
    creation,
    owner_kinds,
)

NAME: Final = "RemoveFailedPods"


class RemoveFailedPodsArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    exclude_owner_kinds: list[str] = []
    min_pod_lifetime_seconds: int | None = None
    reasons: list[str] = []
    exit_codes: list[int] = []
    including_init_containers: bool = False

    def defaulted(self) -> Self:
        if self.min_pod_lifetime_seconds is None:
            return msgspec.structs.replace(self, min_pod_lifetime_seconds=3600)
        return self

    def validate(self, path: str) -> None:
        check_pod_selection(self.namespaces, self.label_selector, path)


def failed_reasons(statuses: Sequence[object]) -> list[str]:
    return [
        s["reason"]
        for which in ("waiting", "terminated")
        for s in container_states(statuses, which)
        if s.get("reason")
    ]


def exit_codes(statuses: Sequence[object]) -> list[int]:
    return [int(s.get("exitCode", 0)) for s in container_states(statuses, "terminated")]


class RemoveFailedPods(DeschedulePlugin):
    name: Final = NAME

    def __init__(self, args: RemoveFailedPodsArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        base = evictable_filter(handle, self.args.namespaces, self.args.label_selector)
        self.keep = lambda p: p.status.phase == "Failed" and base(p) and self.can_evict(p)

    def can_evict(self, pod: Pod) -> bool:
        """``validateCanEvict``."""
        args, status = self.args, pod.status
        minimum = args.min_pod_lifetime_seconds
        if minimum is not None and int(self.handle.cluster.now - creation(pod)) < minimum:
            return False
        if args.exclude_owner_kinds and set(owner_kinds(pod)) & set(args.exclude_owner_kinds):
            return False
        if args.reasons:
            reasons = failed_reasons(status.container_statuses)
            if status.phase == "Failed" and status.reason:
                reasons.append(status.reason)
            if args.including_init_containers:
                reasons += failed_reasons(status.init_container_statuses)
            if not set(args.reasons) & set(reasons):
                return False
        if args.exit_codes:
            codes = exit_codes(status.container_statuses)
            if args.including_init_containers:
                codes += exit_codes(status.init_container_statuses)
            if not set(args.exit_codes) & set(codes):
                return False
        return True

    def deschedule(self, nodes: Sequence[Node]) -> str | None:
        for node in nodes:
            pods = self.handle.cluster.pods_on(node.metadata.name, self.keep)
            if not evict_all(self.handle, pods, NAME):
                return None
        return None


def new(args: RemoveFailedPodsArgs | None, handle: Handle) -> RemoveFailedPods:
    return RemoveFailedPods(args or RemoveFailedPodsArgs(), handle)


ENTRY: Final = PluginEntry(NAME, RemoveFailedPodsArgs, new, RemoveFailedPods)
