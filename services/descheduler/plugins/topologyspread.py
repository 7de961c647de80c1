"""RemovePodsViolatingTopologySpreadConstraint (descheduler
``removepodsviolatingtopologyspreadconstraint``), a Balance plugin.

Per namespace, every distinct topology spread constraint of its pods (those whose
``whenUnsatisfiable`` is in ``constraints``, default DoNotSchedule) is checked: the
domains are the values of its topology key on the nodes its node inclusion policies
admit, each counting the pods its selector (plus ``matchLabelKeys``) matches. A
constraint whose largest and smallest domains differ by more than ``maxSkew`` is
balanced as upstream does: from the largest domains towards the smallest, moving
``min(ceil(above average), ceil(below average), ceil((skew - maxSkew) / 2))`` pods
at a time, the pods that fit a node below the average first (and only those with
``topologyBalanceNodeFit``, the default). The pods chosen are then evicted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector, LabelSelectorRequirement, Node, Pod
from contracts.k8s.pod import TopologySpreadConstraint
from services.common.k8s.labels import matches_label_selector
from services.common.k8s.nodeaffinity import get_required_node_affinity
from services.common.k8s.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    find_matching_untolerated_taint,
    tolerations_of,
)
from services.descheduler.api import BalancePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import Outcome, evict
from services.descheduler.podutil import Namespaces, check_pod_selection, is_terminating, pod_filter
from services.framework.api.registry import ConfigError, join_path

NAME: Final = "RemovePodsViolatingTopologySpreadConstraint"
ACTIONS: Final = ("DoNotSchedule", "ScheduleAnyway")


class RemovePodsViolatingTopologySpreadConstraintArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    constraints: list[str] = []
    topology_balance_node_fit: bool | None = None

    def defaulted(self) -> Self:
        return msgspec.structs.replace(
            self,
            constraints=self.constraints or ["DoNotSchedule"],
            topology_balance_node_fit=(
                True if self.topology_balance_node_fit is None else self.topology_balance_node_fit
            ),
        )

    def validate(self, path: str) -> None:
        check_pod_selection(self.namespaces, self.label_selector, path)
        for i, action in enumerate(self.constraints):
            if action not in ACTIONS:
                raise ConfigError(
                    join_path(path, f"constraints[{i}]"),
                    f"constraint {action} is not one of [{' '.join(ACTIONS)}]",
                )


@dataclass(frozen=True)
class Constraint:
    """``topologySpreadConstraint``: what two identical constraints share."""

    max_skew: int
    key: str
    selector: bytes
    """The selector (with ``matchLabelKeys`` merged), encoded: for identity."""
    affinity_honored: bool
    taints_honored: bool
    owner: Pod
    """A pod carrying it: its node affinity and tolerations when honoured."""

    def identity(self) -> tuple[object, ...]:
        affinity = self.owner.spec.affinity if self.affinity_honored else None
        tolerations = self.owner.spec.tolerations if self.taints_honored else None
        return (
            self.max_skew,
            self.key,
            self.selector,
            self.affinity_honored,
            self.taints_honored,
            msgspec.json.encode(
                (affinity.node_affinity if affinity else None, self.owner.spec.node_selector)
            )
            if self.affinity_honored
            else b"",
            msgspec.json.encode(tolerations) if tolerations is not None else b"",
        )

    def matches(self, pod: Pod) -> bool:
        return matches_label_selector(
            msgspec.json.decode(self.selector, type=LabelSelector), pod.metadata.labels
        )

    def admits(self, node: Node) -> bool:
        """``matchNodeInclusionPolicies``."""
        if self.affinity_honored and not get_required_node_affinity(self.owner).matches(node):
            return False
        if self.taints_honored:
            untolerated = find_matching_untolerated_taint(
                node.spec.taints,
                tolerations_of(self.owner.spec.tolerations),
                lambda t: t.effect in (NO_SCHEDULE, NO_EXECUTE),
            )
            if untolerated is not None:
                return False
        return True


def constraint_of(spec: TopologySpreadConstraint, pod: Pod) -> Constraint:
    """``newTopologySpreadConstraint``: the selector with ``matchLabelKeys`` merged."""
    selector = spec.label_selector or LabelSelector()
    keys = spec.match_label_keys
    extra = [
        LabelSelectorRequirement(key=k, operator="In", values=[pod.metadata.labels[k]])
        for k in keys
        if k in pod.metadata.labels
    ]
    if extra:
        selector = LabelSelector(
            match_labels=selector.match_labels,
            match_expressions=[*selector.match_expressions, *extra],
        )
    affinity = spec.node_affinity_policy or "Honor"
    taints = spec.node_taints_policy or "Ignore"
    return Constraint(
        spec.max_skew,
        spec.topology_key,
        msgspec.json.encode(selector),
        affinity == "Honor",
        taints == "Honor",
        pod,
    )


def _priority_rank(pod: Pod) -> tuple[int, int]:
    return (0, 0) if pod.spec.priority is None else (1, pod.spec.priority)


def _pinned(pod: Pod) -> bool:
    """``hasSelectorOrAffinity``."""
    affinity = pod.spec.affinity
    return bool(pod.spec.node_selector) or (
        affinity is not None and affinity.node_affinity is not None
    )


@dataclass
class Domain:
    value: str
    pods: list[Pod]


class RemovePodsViolatingTopologySpreadConstraint(BalancePlugin):
    name: Final = NAME

    def __init__(
        self, args: RemovePodsViolatingTopologySpreadConstraintArgs, handle: Handle
    ) -> None:
        self.args = args.defaulted()
        self.handle = handle
        self.keep = pod_filter(
            handle.evictor.filter, self.args.namespaces, self.args.label_selector
        )

    def balance(self, nodes: Sequence[Node]) -> str | None:
        node_map = {n.metadata.name: n for n in nodes}
        chosen: dict[str, Pod] = {}
        allowed = set(self.args.constraints)
        by_namespace: dict[str, list[Pod]] = {}
        for node in nodes:
            for pod in self.handle.cluster.active_pods_on(node.metadata.name, self.keep):
                by_namespace.setdefault(pod.metadata.namespace or "default", []).append(pod)
        for pods in by_namespace.values():
            constraints: list[Constraint] = []
            seen: set[tuple[object, ...]] = set()
            for pod in pods:
                for spec in pod.spec.topology_spread_constraints:
                    if spec.when_unsatisfiable not in allowed:
                        continue
                    constraint = constraint_of(spec, pod)
                    if constraint.identity() in seen:
                        continue
                    seen.add(constraint.identity())
                    constraints.append(constraint)
            for constraint in constraints:
                domains: dict[str, list[Pod]] = {}
                for node in nodes:
                    value = node.metadata.labels.get(constraint.key)
                    if value is not None and constraint.admits(node):
                        domains.setdefault(value, [])
                total = 0
                for pod in pods:
                    if is_terminating(pod) or not constraint.matches(pod):
                        continue
                    placed = node_map.get(pod.spec.node_name or "")
                    value = placed.metadata.labels.get(constraint.key) if placed else None
                    if value is None:
                        continue
                    domains.setdefault(value, []).append(pod)
                    total += 1
                sizes = [len(p) for p in domains.values()]
                if not sizes or max(sizes) - min(sizes) <= constraint.max_skew:
                    continue
                self._balance_domains(chosen, constraint, domains, total, nodes)
        limited: set[str] = set()
        evictor = self.handle.evictor
        for pod in chosen.values():
            where = pod.spec.node_name or ""
            if where in limited or not self.keep(pod) or not evictor.pre_eviction_filter(pod):
                continue
            match evict(self.handle, pod, NAME):
                case Outcome.NODE_LIMIT:
                    limited.add(where)
                case Outcome.TOTAL_LIMIT:
                    return None
        return None

    def _balance_domains(
        self,
        chosen: dict[str, Pod],
        constraint: Constraint,
        domains: dict[str, list[Pod]],
        total: int,
        nodes: Sequence[Node],
    ) -> None:
        """``balanceDomains``."""
        ideal = total / len(domains)
        evictable = self.handle.evictor.filter

        def order(pod: Pod) -> tuple[int, int, tuple[int, int]]:
            # ``sortDomains``: pods that cannot be evicted first, then those with a node
            # selector or affinity, then by priority, lowest (none) first; the pods
            # moved are taken from the end.
            return (int(evictable(pod)), int(not _pinned(pod)), _priority_rank(pod))

        sorted_domains = [Domain(v, sorted(p, key=order)) for v, p in domains.items()]
        sorted_domains.sort(key=lambda d: len(d.pods))
        eligible = [n for n in nodes if constraint.admits(n)]
        below_nodes = [
            n
            for d in sorted_domains
            if len(d.pods) < ideal
            for n in eligible
            if n.metadata.labels.get(constraint.key) == d.value
        ]
        fit_needed = bool(self.args.topology_balance_node_fit)
        i, j = 0, len(sorted_domains) - 1
        while i < j:
            if len(sorted_domains[j].pods) <= ideal:
                j -= 1
            skew = len(sorted_domains[j].pods) - len(sorted_domains[i].pods)
            if skew <= constraint.max_skew:
                i += 1
                continue
            above = math.ceil(len(sorted_domains[j].pods) - ideal)
            below_avg = math.ceil(ideal - len(sorted_domains[i].pods))
            half = math.ceil((skew - constraint.max_skew) / 2)
            move = int(min(above, below_avg, half))
            if move <= 0:
                i += 1
                continue
            source = sorted_domains[j].pods
            # Upstream sorts the domain's pods stably, those that fit a node below the
            # average last, and moves the last ``move``. The same pods, asking only as
            # far as needed: the fitting pods nearest the end, then the last others.
            fitting: list[int] = []
            for k in range(len(source) - 1, -1, -1):
                if len(fitting) == move:
                    break
                if self.handle.fits_other_node(source[k], below_nodes):
                    fitting.append(k)
            fitting.reverse()
            taken = set(fitting)
            others = [k for k in range(len(source)) if k not in taken]
            arranged = others + fitting  # the stable sort's result, as indices
            moving = [source[k] for k in arranged[len(arranged) - move :]]
            fit_uids = {source[k].metadata.uid for k in fitting}
            for pod in moving:
                if fit_needed and pod.metadata.uid not in fit_uids:
                    continue
                chosen.setdefault(pod.metadata.uid, pod)
            sorted_domains[j].pods = [source[k] for k in arranged[: len(arranged) - move]]
            sorted_domains[i].pods = sorted_domains[i].pods + moving


def new(
    args: RemovePodsViolatingTopologySpreadConstraintArgs | None, handle: Handle
) -> RemovePodsViolatingTopologySpreadConstraint:
    return RemovePodsViolatingTopologySpreadConstraint(
        args or RemovePodsViolatingTopologySpreadConstraintArgs(), handle
    )


ENTRY: Final = PluginEntry(
    NAME,
    RemovePodsViolatingTopologySpreadConstraintArgs,
    new,
    RemovePodsViolatingTopologySpreadConstraint,
)
