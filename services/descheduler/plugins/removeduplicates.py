"""RemoveDuplicates (descheduler ``removeduplicates``), a Balance plugin: pods of the
same owner (namespace, kind, name) with the same images on one node are duplicates;
where the nodes such pods may run on (their taints tolerated, their node selector and
required node affinity matched) number two or more, each node keeps at most
``ceil(owner's pods / those nodes)`` of them and the rest are evicted."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, Self

import msgspec

from contracts.k8s import Node, Pod
from services.common.k8s.nodeaffinity import get_required_node_affinity
from services.common.k8s.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    find_matching_untolerated_taint,
    tolerations_of,
)
from services.descheduler.api import BalancePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import Outcome, evict, evictable_filter
from services.descheduler.podutil import Namespaces
from services.framework.api.registry import join_path

NAME: Final = "RemoveDuplicates"

OwnerKey = tuple[str, str, str, str]
"""(namespace, kind, name, the pod's sorted images joined by ``#``)."""


class RemoveDuplicatesArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    namespaces: Namespaces | None = None
    exclude_owner_kinds: list[str] = []

    def defaulted(self) -> Self:
        return self

    def validate(self, path: str) -> None:
        if self.namespaces is not None:
            self.namespaces.check(join_path(path, "namespaces"))


def tolerates_node(pod: Pod, node: Node) -> bool:
    """Its NoSchedule and NoExecute taints are all tolerated."""
    untolerated = find_matching_untolerated_taint(
        node.spec.taints,
        tolerations_of(pod.spec.tolerations),
        lambda t: t.effect in (NO_SCHEDULE, NO_EXECUTE),
    )
    return untolerated is None


def _placement(pod: Pod) -> bytes:
    """What decides where a pod may run: tolerations, required node affinity, node
    selector (``getTargetNodes``' notion of distinct pods)."""
    affinity = pod.spec.affinity
    required = (
        affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if affinity and affinity.node_affinity
        else None
    )
    return msgspec.json.encode(
        (
            sorted(msgspec.json.encode(t) for t in pod.spec.tolerations),
            required,
            pod.spec.node_selector,
        )
    )


def target_nodes(
    pods_by_node: dict[str, list[Pod]],
    nodes: Sequence[Node],
    memo: dict[bytes, frozenset[str]] | None = None,
) -> set[str]:
    """``getTargetNodes``: the nodes any distinct duplicate may run on, counting only
    pods that may run on two or more nodes. ``memo`` keeps each placement's nodes
    across owners (most owners share a handful of placements)."""
    memo = {} if memo is None else memo
    distinct: dict[bytes, Pod] = {}
    for pods in pods_by_node.values():
        for pod in pods:
            distinct.setdefault(_placement(pod), pod)
    targets: set[str] = set()
    for placement, pod in distinct.items():
        matching = memo.get(placement)
        if matching is None:
            matching = memo[placement] = frozenset(
                n.metadata.name
                for n in nodes
                if tolerates_node(pod, n) and get_required_node_affinity(pod).matches(n)
            )
        if len(matching) > 1:
            targets |= matching
    return targets


class RemoveDuplicates(BalancePlugin):
    name: Final = NAME

    def __init__(self, args: RemoveDuplicatesArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.keep = evictable_filter(handle, args.namespaces)

    def balance(self, nodes: Sequence[Node]) -> str | None:
        duplicates: dict[OwnerKey, dict[str, list[Pod]]] = {}
        occurrences: dict[OwnerKey, int] = {}
        excluded = set(self.args.exclude_owner_kinds)
        for node in nodes:
            name = node.metadata.name
            seen: dict[str, list[list[str]]] = {}
            for pod in self.handle.cluster.active_pods_on(name, self.keep):
                owners = pod.metadata.owner_references
                if not owners or any(o.kind in excluded for o in owners):
                    continue
                ns = pod.metadata.namespace or "default"
                images = sorted(c.image or "" for c in pod.spec.containers)
                digest = "#".join(images)
                container_keys = []
                for owner in owners:
                    key = (ns, owner.kind, owner.name, digest)
                    occurrences[key] = occurrences.get(key, 0) + 1
                    container_keys += [f"{ns}/{owner.kind}/{owner.name}/{i}" for i in images]
                container_keys.sort()
                first = container_keys[0] if container_keys else ""
                known = seen.setdefault(first, [])
                if container_keys in known:
                    for owner in owners:
                        key = (ns, owner.kind, owner.name, digest)
                        duplicates.setdefault(key, {}).setdefault(name, []).append(pod)
                else:
                    known.append(container_keys)
        memo: dict[bytes, frozenset[str]] = {}
        for key, by_node in duplicates.items():
            targets = target_nodes(by_node, nodes, memo)
            if len(targets) < 2:
                continue
            upper = math.ceil(occurrences[key] / len(targets))
            for pods in by_node.values():
                if len(pods) + 1 <= upper:
                    continue
                for pod in pods[upper - 1 :]:
                    outcome = evict(self.handle, pod, NAME)
                    if outcome is Outcome.NODE_LIMIT:
                        break
                    if outcome is Outcome.TOTAL_LIMIT:
                        return None
        return None


def new(args: RemoveDuplicatesArgs | None, handle: Handle) -> RemoveDuplicates:
    return RemoveDuplicates(args or RemoveDuplicatesArgs(), handle)


ENTRY: Final = PluginEntry(NAME, RemoveDuplicatesArgs, new, RemoveDuplicates)
