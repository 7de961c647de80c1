"""RemovePodsHavingTooManyRestarts (descheduler ``removepodshavingtoomanyrestarts``):
evict pods whose containers restarted at least ``podRestartThreshold`` times, most
restarts first on each node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector, Node, Pod
from services.descheduler.api import DeschedulePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import evict_all, evictable_filter
from services.descheduler.podutil import Namespaces, check_pod_selection, container_states
from services.framework.api.registry import ConfigError, join_path

NAME: Final = "RemovePodsHavingTooManyRestarts"
ALLOWED_STATES: Final = ("CrashLoopBackOff", "Running")


class RemovePodsHavingTooManyRestartsArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    pod_restart_threshold: int = 0
    including_init_containers: bool = False
    states: list[str] = []

    def defaulted(self) -> Self:
        return self

    def validate(self, path: str) -> None:
        check_pod_selection(self.namespaces, self.label_selector, path)
        if self.pod_restart_threshold < 1:
            raise ConfigError(
                join_path(path, "podRestartThreshold"),
                "invalid PodsHavingTooManyRestarts threshold",
            )
        if any(s not in ALLOWED_STATES for s in self.states):
            raise ConfigError(
                join_path(path, "states"), f"states must be one of [{' '.join(ALLOWED_STATES)}]"
            )


def restarts(pod: Pod, init: bool) -> int:
    total = sum(s.restart_count for s in pod.status.container_statuses)
    if init:
        total += sum(s.restart_count for s in pod.status.init_container_statuses)
    return total


class RemovePodsHavingTooManyRestarts(DeschedulePlugin):
    name: Final = NAME

    def __init__(self, args: RemovePodsHavingTooManyRestartsArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.base = evictable_filter(handle, args.namespaces, args.label_selector)

    def keep(self, pod: Pod) -> bool:
        args = self.args
        if not self.base(pod):
            return False
        if restarts(pod, args.including_init_containers) < args.pod_restart_threshold:
            return False
        if args.states:
            states = set(args.states)
            if pod.status.phase in states:
                return True
            waiting = {
                s.get("reason") for s in container_states(pod.status.container_statuses, "waiting")
            }
            if args.including_init_containers:
                waiting |= {
                    s.get("reason")
                    for s in container_states(pod.status.init_container_statuses, "waiting")
                }
            return bool(waiting & states)
        return True

    def deschedule(self, nodes: Sequence[Node]) -> str | None:
        init = self.args.including_init_containers
        for node in nodes:
            pods = self.handle.cluster.pods_on(node.metadata.name, self.keep)
            pods.sort(key=lambda p: -restarts(p, init))
            if not evict_all(self.handle, pods, NAME):
                return None
        return None


def new(
    args: RemovePodsHavingTooManyRestartsArgs | None, handle: Handle
) -> RemovePodsHavingTooManyRestarts:
    return RemovePodsHavingTooManyRestarts(args or RemovePodsHavingTooManyRestartsArgs(), handle)


ENTRY: Final = PluginEntry(
    NAME, RemovePodsHavingTooManyRestartsArgs, new, RemovePodsHavingTooManyRestarts
)
