"""RemovePodsViolatingInterPodAntiAffinity (descheduler
``removepodsviolatinginterpodantiaffinity``): evict pods whose required pod
anti-affinity matches another pod in the same topology domain; node by node, lowest
priority first, the evicted pod no longer counting for the pods after it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector, Node, Pod
from services.common.k8s.labels import matches_label_selector
from services.descheduler.api import DeschedulePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import Outcome, evict
from services.descheduler.podutil import (
    Namespaces,
    check_pod_selection,
    pod_filter,
    sort_by_priority_low_to_high,
)

NAME: Final = "RemovePodsViolatingInterPodAntiAffinity"


class RemovePodsViolatingInterPodAntiAffinityArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None

    def defaulted(self) -> Self:
        return self

    def validate(self, path: str) -> None:
        check_pod_selection(self.namespaces, self.label_selector, path)


def same_domain(a: Node, b: Node, key: str) -> bool:
    """``hasSameLabelValue``: the same node, or both labelled ``key`` alike."""
    if a.metadata.name == b.metadata.name:
        return True
    left, right = a.metadata.labels.get(key), b.metadata.labels.get(key)
    return left is not None and right is not None and left == right


def violates(candidate: Pod, by_namespace: dict[str, list[Pod]], nodes: dict[str, Node]) -> bool:
    """``CheckPodsWithAntiAffinityExist``: a required anti-affinity term of
    ``candidate`` matches another pod in its topology domain."""
    here = nodes.get(candidate.spec.node_name or "")
    affinity = candidate.spec.affinity
    if here is None or affinity is None or affinity.pod_anti_affinity is None:
        return False
    for term in affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution:
        namespaces = set(term.namespaces) or {candidate.metadata.namespace or "default"}
        selector = term.label_selector or LabelSelector()
        for ns in namespaces:
            for other in by_namespace.get(ns, ()):
                if other.metadata.name == candidate.metadata.name:
                    continue
                if not matches_label_selector(selector, other.metadata.labels):
                    continue
                there = nodes.get(other.spec.node_name or "")
                if there is not None and same_domain(here, there, term.topology_key):
                    return True
    return False


class RemovePodsViolatingInterPodAntiAffinity(DeschedulePlugin):
    name: Final = NAME

    def __init__(self, args: RemovePodsViolatingInterPodAntiAffinityArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.keep = pod_filter(None, args.namespaces, args.label_selector)

    def deschedule(self, nodes: Sequence[Node]) -> str | None:
        cluster, evictor = self.handle.cluster, self.handle.evictor
        by_node = {
            n.metadata.name: cluster.active_pods_on(n.metadata.name, self.keep) for n in nodes
        }
        by_namespace: dict[str, list[Pod]] = {}
        for pods in by_node.values():
            for pod in pods:
                by_namespace.setdefault(pod.metadata.namespace or "default", []).append(pod)
        node_map = {n.metadata.name: n for n in nodes}
        for node in nodes:
            pods = list(by_node[node.metadata.name])
            sort_by_priority_low_to_high(pods)
            for pod in pods:
                if not violates(pod, by_namespace, node_map):
                    continue
                if not (evictor.filter(pod) and evictor.pre_eviction_filter(pod)):
                    continue
                outcome = evict(self.handle, pod, NAME)
                if outcome is Outcome.NODE_LIMIT:
                    break
                if outcome is Outcome.TOTAL_LIMIT:
                    return None
                if outcome is Outcome.FAILED:
                    continue
                peers = by_namespace[pod.metadata.namespace or "default"]
                for i, other in enumerate(peers):
                    if other.metadata.name == pod.metadata.name:
                        del peers[i]
                        break
        return None


def new(
    args: RemovePodsViolatingInterPodAntiAffinityArgs | None, handle: Handle
) -> RemovePodsViolatingInterPodAntiAffinity:
    return RemovePodsViolatingInterPodAntiAffinity(
        args or RemovePodsViolatingInterPodAntiAffinityArgs(), handle
    )


ENTRY: Final = PluginEntry(
    NAME, RemovePodsViolatingInterPodAntiAffinityArgs, new, RemovePodsViolatingInterPodAntiAffinity
)
