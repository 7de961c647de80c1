"""RemovePodsViolatingNodeAffinity (descheduler ``removepodsviolatingnodeaffinity``):
for ``requiredDuringSchedulingIgnoredDuringExecution``, evict pods whose node no
longer matches their nodeSelector and required node affinity; for
``preferredDuringSchedulingIgnoredDuringExecution``, pods for which another node
matches preferred terms of greater total weight. Either way only pods that fit some
node (the scheduler's filters say)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector, Node, Pod
from services.common.k8s.nodeaffinity import (
    compile_preferred,
    get_required_node_affinity,
    preferred_score,
)
from services.descheduler.api import DeschedulePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import evict_all, evictable_filter
from services.descheduler.podutil import Namespaces, check_pod_selection
from services.framework.api.registry import ConfigError, join_path

NAME: Final = "RemovePodsViolatingNodeAffinity"
REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


class RemovePodsViolatingNodeAffinityArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    node_affinity_type: list[str] = []

    def defaulted(self) -> Self:
        return self

    def validate(self, path: str) -> None:
        if not self.node_affinity_type:
            raise ConfigError(
                join_path(path, "nodeAffinityType"), "nodeAffinityType needs to be set"
            )
        check_pod_selection(self.namespaces, self.label_selector, path)


def preferred_weight(pod: Pod, node: Node) -> int:
    """``GetNodeWeightGivenPodPreferredAffinity``: the weights of the preferred terms
    ``node`` matches."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return 0
    terms, errors = compile_preferred(
        affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
    )
    if errors:
        return 0
    return preferred_score(terms, node)


def has_affinity(pod: Pod, kind: str) -> bool:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return False
    if kind == REQUIRED:
        return (
            affinity.node_affinity.required_during_scheduling_ignored_during_execution is not None
        )
    return bool(affinity.node_affinity.preferred_during_scheduling_ignored_during_execution)


class RemovePodsViolatingNodeAffinity(DeschedulePlugin):
    name: Final = NAME

    def __init__(self, args: RemovePodsViolatingNodeAffinityArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.base = evictable_filter(handle, args.namespaces, args.label_selector)

    def deschedule(self, nodes: Sequence[Node]) -> str | None:
        handle = self.handle
        for kind in self.args.node_affinity_type:
            if kind not in (REQUIRED, PREFERRED):
                continue

            def violates(pod: Pod, node: Node, kind: str = kind) -> bool:
                if not has_affinity(pod, kind) or not handle.evictor.filter(pod):
                    return False
                if kind == REQUIRED:
                    wrong = not get_required_node_affinity(pod).matches(node)
                else:
                    best = max((preferred_weight(pod, n) for n in nodes), default=0)
                    wrong = best > preferred_weight(pod, node)
                return wrong and handle.fits_any_node(pod, nodes)

            for node in nodes:

                def keep(pod: Pod, node: Node = node) -> bool:
                    return self.base(pod) and violates(pod, node)

                pods = handle.cluster.active_pods_on(node.metadata.name, keep)
                if not evict_all(handle, pods, NAME):
                    return None
        return None


def new(
    args: RemovePodsViolatingNodeAffinityArgs | None, handle: Handle
) -> RemovePodsViolatingNodeAffinity:
    return RemovePodsViolatingNodeAffinity(args or RemovePodsViolatingNodeAffinityArgs(), handle)


ENTRY: Final = PluginEntry(
    NAME, RemovePodsViolatingNodeAffinityArgs, new, RemovePodsViolatingNodeAffinity
)
