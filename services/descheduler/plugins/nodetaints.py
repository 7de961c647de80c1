"""RemovePodsViolatingNodeTaints (descheduler ``removepodsviolatingnodetaints``):
evict pods that do not tolerate a NoSchedule taint of their node (and PreferNoSchedule
with ``includePreferNoSchedule``), minus ``excludedTaints`` or only ``includedTaints``
(each ``key`` or ``key=value``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector, Node, Pod, Taint
from services.common.k8s.taints import find_matching_untolerated_taint, tolerations_of
from services.descheduler.api import DeschedulePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import evict_all, evictable_filter
from services.descheduler.podutil import Namespaces, check_pod_selection
from services.framework.api.registry import ConfigError

NAME: Final = "RemovePodsViolatingNodeTaints"


class RemovePodsViolatingNodeTaintsArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    include_prefer_no_schedule: bool = False
    excluded_taints: list[str] | None = None
    included_taints: list[str] | None = None

    def defaulted(self) -> Self:
        return self

    def validate(self, path: str) -> None:
        check_pod_selection(self.namespaces, self.label_selector, path)
        if self.excluded_taints and self.included_taints:
            raise ConfigError(
                path, "either includedTaints or excludedTaints can be set, but not both"
            )


class RemovePodsViolatingNodeTaints(DeschedulePlugin):
    name: Final = NAME

    def __init__(self, args: RemovePodsViolatingNodeTaintsArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.base = evictable_filter(handle, args.namespaces, args.label_selector)
        effects = (
            {"NoSchedule", "PreferNoSchedule"}
            if args.include_prefer_no_schedule
            else {"NoSchedule"}
        )
        excluded = set(args.excluded_taints or ())
        included = set(args.included_taints or ())

        def named(taint: Taint, names: set[str]) -> bool:
            return taint.key in names or (
                bool(taint.value) and f"{taint.key}={taint.value}" in names
            )

        def counts(taint: Taint) -> bool:
            return (
                taint.effect in effects
                and not named(taint, excluded)
                and (args.included_taints is None or named(taint, included))
            )

        self.counts = counts

    def violates(self, pod: Pod, node: Node) -> bool:
        tolerations = tolerations_of(pod.spec.tolerations)
        untolerated = find_matching_untolerated_taint(node.spec.taints, tolerations, self.counts)
        return untolerated is not None

    def deschedule(self, nodes: Sequence[Node]) -> str | None:
        for node in nodes:
            pods = self.handle.cluster.active_pods_on(node.metadata.name, self.base)
            if not evict_all(self.handle, [p for p in pods if self.violates(p, node)], NAME):
                return None
        return None


def new(
    args: RemovePodsViolatingNodeTaintsArgs | None, handle: Handle
) -> RemovePodsViolatingNodeTaints:
    return RemovePodsViolatingNodeTaints(args or RemovePodsViolatingNodeTaintsArgs(), handle)


ENTRY: Final = PluginEntry(
    NAME, RemovePodsViolatingNodeTaintsArgs, new, RemovePodsViolatingNodeTaints
)
