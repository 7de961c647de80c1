"""PodLifeTime (descheduler ``podlifetime``): evict pods older than
``maxPodLifeTimeSeconds``, or in one of ``states``, matching ``conditions``,
``exitCodes`` and owner kinds; oldest first, across all nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector, Node, Pod
from services.common.k8s.timestamps import parse_time
from services.descheduler.api import DeschedulePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import evict_all, evictable_filter
from services.descheduler.podutil import (
    Namespaces,
    check_selector,
    container_states,
    creation,
    owner_kinds,
    sort_by_age,
)
from services.framework.api.registry import ConfigError, join_path

NAME: Final = "PodLifeTime"
ALLOWED_STATES: Final = frozenset(
    {
        "Running", "Pending", "Succeeded", "Failed", "Unknown",
        "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError",
        "PodInitializing", "ContainerCreating", "ImagePullBackOff", "CrashLoopBackOff",
        "CreateContainerConfigError", "ErrImagePull", "CreateContainerError",
        "InvalidImageName",
        "OOMKilled", "Error", "Completed", "DeadlineExceeded", "Evicted",
        "ContainerCannotRun", "StartError",
    }
)  # fmt: skip


class OwnerKinds(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    include: list[str] = []
    exclude: list[str] = []


class PodConditionFilter(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    type: str = ""
    status: str = ""
    reason: str = ""
    min_time_since_last_transition_seconds: int | None = None


class PodLifeTimeArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    owner_kinds: OwnerKinds | None = None
    max_pod_life_time_seconds: int | None = None
    states: list[str] = []
    conditions: list[PodConditionFilter] = []
    exit_codes: list[int] = []
    including_init_containers: bool = False
    including_ephemeral_containers: bool = False

    def defaulted(self) -> Self:
        return self

    def validate(self, path: str) -> None:
        """``ValidatePodLifeTimeArgs`` (its first error)."""
        if self.namespaces is not None:
            self.namespaces.check(join_path(path, "namespaces"))
        if self.owner_kinds is not None and self.owner_kinds.include and self.owner_kinds.exclude:
            raise ConfigError(
                join_path(path, "ownerKinds"), "only one of Include/Exclude ownerKinds can be set"
            )
        check_selector(self.label_selector, join_path(path, "labelSelector"))
        if any(s not in ALLOWED_STATES for s in self.states):
            raise ConfigError(
                join_path(path, "states"),
                f"states must be one of [{' '.join(sorted(ALLOWED_STATES))}]",
            )
        for i, c in enumerate(self.conditions):
            if (
                not (c.type or c.status or c.reason)
                and c.min_time_since_last_transition_seconds is None
            ):
                raise ConfigError(
                    join_path(path, f"conditions[{i}]"),
                    f"conditions[{i}]: at least one of type, status, reason, or "
                    "minTimeSinceLastTransitionSeconds must be set",
                )
        if (
            self.max_pod_life_time_seconds is None
            and not self.states
            and not self.conditions
            and not self.exit_codes
        ):
            raise ConfigError(
                path,
                "at least one filtering criterion must be specified (maxPodLifeTimeSeconds, "
                "states, conditions, or exitCodes)",
            )


def _reasons(statuses: Sequence[object], which: str) -> set[str]:
    return {s.get("reason", "") for s in container_states(statuses, which)} - {""}


class PodLifeTime(DeschedulePlugin):
    name: Final = NAME

    def __init__(self, args: PodLifeTimeArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.base = evictable_filter(handle, args.namespaces, args.label_selector)

    def keep(self, pod: Pod) -> bool:
        args, now = self.args, self.handle.cluster.now
        if not self.base(pod):
            return False
        if args.max_pod_life_time_seconds is not None:
            age = now - creation(pod)
            if age < 0 or int(age) <= args.max_pod_life_time_seconds:
                return False
        if args.states and not self._in_state(pod):
            return False
        kinds = args.owner_kinds
        if kinds is not None:
            owned = set(owner_kinds(pod))
            if kinds.include and not owned & set(kinds.include):
                return False
            if not kinds.include and kinds.exclude and owned & set(kinds.exclude):
                return False
        if args.conditions and not self._condition_matches(pod):
            return False
        if args.exit_codes:
            statuses = list(pod.status.container_statuses)
            if args.including_init_containers:
                statuses += pod.status.init_container_statuses
            codes = {int(s.get("exitCode", 0)) for s in container_states(statuses, "terminated")}
            if not codes & set(args.exit_codes):
                return False
        return True

    def _in_state(self, pod: Pod) -> bool:
        states, status = set(self.args.states), pod.status
        if status.phase in states or (status.reason and status.reason in states):
            return True
        groups = [status.container_statuses]
        if self.args.including_init_containers:
            groups.append(status.init_container_statuses)
        return any(
            _reasons(g, "waiting") & states or _reasons(g, "terminated") & states for g in groups
        )

    def _condition_matches(self, pod: Pod) -> bool:
        now = self.handle.cluster.now
        for f in self.args.conditions:
            for cond in pod.status.conditions:
                if f.type and cond.type != f.type:
                    continue
                if f.status and cond.status != f.status:
                    continue
                if f.reason and cond.reason != f.reason:
                    continue
                if f.min_time_since_last_transition_seconds is not None:
                    changed = parse_time(getattr(cond, "last_transition_time", None))
                    if changed is None:
                        continue
                    idle = now - changed
                    if idle < 0 or int(idle) < f.min_time_since_last_transition_seconds:
                        continue
                return True
        return False

    def deschedule(self, nodes: Sequence[Node]) -> str | None:
        pods = [p for n in nodes for p in self.handle.cluster.pods_on(n.metadata.name, self.keep)]
        sort_by_age(pods)
        evict_all(self.handle, pods, NAME, on_node_limit="next pod")
        return None


def new(args: PodLifeTimeArgs | None, handle: Handle) -> PodLifeTime:
    return PodLifeTime(args or PodLifeTimeArgs(), handle)


ENTRY: Final = PluginEntry(NAME, PodLifeTimeArgs, new, PodLifeTime)
