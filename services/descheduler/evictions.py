"""The pod evictor (descheduler ``pkg/descheduler/evictions``): evictions within the
policy's limits, counted over the whole cycle and every profile.

Checks, in upstream's order: the total limit, the node limit, the namespace limit;
each counts this cycle's evictions plus the evictions still outstanding (published,
the pod not yet deleted). ksched adds what the API server would refuse: a pod whose
eviction is outstanding is not evicted again, and a pod whose PodDisruptionBudget has
no disruption left (``status.disruptionsAllowed`` minus the outstanding and this
cycle's evictions of pods it covers) is refused with the API server's 429 text.

Every refusal is kept with its reason (:meth:`PodEvictor.refuse`): the limits and
budgets above, and what the profiles' Filter and PreEvictionFilter plugins refused
(DefaultEvictor's checks, in upstream's words), so ``ksched deschedule`` can say why
a pod a plugin chose stayed (:attr:`PodEvictor.not_evicted`). The metrics see
upstream's fixed ``result`` values only (:data:`RESULTS`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Final

from contracts.k8s import Pod, PodDisruptionBudget
from services.common.k8s.labels import matches_label_selector
from services.descheduler import podutil
from services.descheduler.api import (
    BudgetError,
    EvictionError,
    EvictOptions,
    NamespaceLimitError,
    NodeLimitError,
    TotalLimitError,
)

RESULTS: Final = (
    "success",
    "error",
    "background",
    str(TotalLimitError()),
    str(NodeLimitError("")),
    str(NamespaceLimitError("")),
)
"""Every value of ``descheduler_pods_evicted_total{result}`` upstream uses
(``pkg/descheduler/evictions/evictions.go``): ``success``, ``error``, ``background``
(an eviction in background, which ksched does not make) and the three limits'
messages. A pod missing its UID, or whose eviction is outstanding, is refused without
being counted, as upstream returns before counting those."""


@dataclass(frozen=True, slots=True)
class Evicted:
    """One eviction decided this cycle."""

    pod: Pod
    node: str
    options: EvictOptions

    @property
    def reason(self) -> str:
        """The Event's reason: the plugin's reason, else the plugin's name."""
        return self.options.reason or self.options.plugin or "NotSet"


@dataclass
class NotEvicted:
    """A pod the evictor refused this cycle, and not evicted after all: every distinct
    reason it was refused for, in the order they came."""

    pod: Pod
    node: str
    reasons: list[str] = field(default_factory=list)


@dataclass
class Limits:
    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None


@dataclass
class PodEvictor:
    limits: Limits = field(default_factory=Limits)
    pdbs: Sequence[PodDisruptionBudget] = ()
    outstanding: Collection[Pod] = ()
    """Pods whose eviction was published in an earlier cycle and which are not gone
    yet: they count against the limits and their PDBs, and are not evicted again."""
    evicted: list[Evicted] = field(default_factory=list)
    refusals: dict[str, NotEvicted] = field(default_factory=dict)
    """Pod key → why the evictor refused it (:meth:`refuse`)."""
    on_result: Callable[[Pod, EvictOptions, str], None] | None = None
    """Told each eviction's result as ``descheduler_pods_evicted_total`` counts it: one
    of :data:`RESULTS` (:func:`result_label`); never told of a pod whose eviction is
    outstanding (it was counted when it was decided)."""

    def __post_init__(self) -> None:
        self._outstanding_uids = {p.metadata.uid for p in self.outstanding}
        self._node: dict[str, int] = {}
        self._namespace: dict[str, int] = {}
        for pod in self.outstanding:
            self._count(pod)
        self._total = len(self._outstanding_uids)
        self._allowed = {
            id(pdb): pdb.status.disruptions_allowed - self._covered(pdb, self.outstanding)
            for pdb in self.pdbs
        }

    def _count(self, pod: Pod) -> None:
        node = pod.spec.node_name or ""
        if node:
            self._node[node] = self._node.get(node, 0) + 1
        ns = pod.metadata.namespace or "default"
        self._namespace[ns] = self._namespace.get(ns, 0) + 1

    @staticmethod
    def _matches(pdb: PodDisruptionBudget, pod: Pod) -> bool:
        if (pdb.metadata.namespace or "default") != (pod.metadata.namespace or "default"):
            return False
        selector = pdb.spec.selector
        if selector is None or not (selector.match_labels or selector.match_expressions):
            return False
        return matches_label_selector(selector, pod.metadata.labels)

    def _covered(self, pdb: PodDisruptionBudget, pods: Collection[Pod]) -> int:
        return sum(
            1
            for p in pods
            if self._matches(pdb, p) and p.metadata.name not in pdb.status.disrupted_pods
        )

    def node_evicted(self, node: str) -> int:
        """``NodeEvicted``: evictions from ``node`` (this cycle and outstanding)."""
        return self._node.get(node, 0)

    @property
    def total_evicted(self) -> int:
        return self._total

    def refuse(self, pod: Pod, reasons: Sequence[str]) -> None:
        """Record that ``pod`` was refused for ``reasons`` (a filter's or an eviction's)."""
        key = podutil.key(pod)
        entry = self.refusals.get(key)
        if entry is None:
            entry = self.refusals[key] = NotEvicted(pod, pod.spec.node_name or "")
        entry.reasons += [r for r in reasons if r not in entry.reasons]

    @property
    def not_evicted(self) -> list[NotEvicted]:
        """The refused pods this cycle did not evict, in the order they were refused."""
        evicted = {podutil.key(e.pod) for e in self.evicted}
        return [r for key, r in self.refusals.items() if key not in evicted]

    def is_outstanding(self, pod: Pod) -> bool:
        return pod.metadata.uid in self._outstanding_uids

    def evict(self, pod: Pod, options: EvictOptions) -> None:
        """``EvictPod``: record the eviction, or raise the error the plugin reacts to."""
        try:
            self._check(pod)
        except EvictionError as error:
            self.refuse(pod, [str(error)])
            counted = pod.metadata.uid and pod.metadata.uid not in self._outstanding_uids
            if self.on_result is not None and counted:
                self.on_result(pod, options, result_label(error))
            raise
        self._outstanding_uids.add(pod.metadata.uid)
        for pdb in self.pdbs:
            if self._matches(pdb, pod) and pod.metadata.name not in pdb.status.disrupted_pods:
                self._allowed[id(pdb)] -= 1
        self._count(pod)
        self._total += 1
        self.evicted.append(Evicted(pod, pod.spec.node_name or "", options))
        if self.on_result is not None:
            self.on_result(pod, options, "success")

    def _check(self, pod: Pod) -> None:
        if not pod.metadata.uid:
            raise EvictionError(f"pod {podutil.key(pod)} is missing UID")
        limits = self.limits
        if limits.total is not None and self._total + 1 > limits.total:
            raise TotalLimitError()
        node = pod.spec.node_name or ""
        if node and limits.per_node is not None and self._node.get(node, 0) + 1 > limits.per_node:
            raise NodeLimitError(node)
        ns = pod.metadata.namespace or "default"
        if (
            limits.per_namespace is not None
            and self._namespace.get(ns, 0) + 1 > limits.per_namespace
        ):
            raise NamespaceLimitError(ns)
        if pod.metadata.uid in self._outstanding_uids:
            raise EvictionError(f"pod {podutil.key(pod)} is already being evicted")
        for pdb in self.pdbs:
            if pod.metadata.name in pdb.status.disrupted_pods or not self._matches(pdb, pod):
                continue
            if self._allowed[id(pdb)] <= 0:
                raise BudgetError(pdb.metadata.name)


def result_label(error: EvictionError) -> str:
    """The ``result`` label of a refused eviction, from upstream's fixed set: a
    limit's own message, else ``error`` (upstream's label when the API server refuses
    an eviction, a PodDisruptionBudget's 429 included). Never a pod's or a budget's
    name: one series per pod would grow without bound."""
    if isinstance(error, TotalLimitError | NodeLimitError | NamespaceLimitError):
        return str(error)
    return "error"


__all__ = ["RESULTS", "Evicted", "Limits", "NotEvicted", "PodEvictor", "result_label"]
