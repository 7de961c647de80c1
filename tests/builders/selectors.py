"""Selectors in a line: label selector requirements (``in_("app", "web")``,
``exists("tier")``), node affinity (``affinity([term(req("zone", "In", "a"))])``) and
inter-pod affinity (``pod_affinity([t1], anti=[t2], preferred=[(5, t3)])``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from contracts.k8s import (
    Affinity,
    LabelSelectorRequirement,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinity,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    WeightedPodAffinityTerm,
)


def in_(key: str, *values: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator="In", values=list(values))


def not_in(key: str, *values: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator="NotIn", values=list(values))


def exists(key: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator="Exists")


def does_not_exist(key: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator="DoesNotExist")


def req(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=operator, values=list(values))


def term(
    *expressions: NodeSelectorRequirement, fields: Sequence[NodeSelectorRequirement] = ()
) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=list(expressions), match_fields=list(fields))


def affinity(
    required: Sequence[NodeSelectorTerm] | None = None,
    preferred: Sequence[tuple[int, NodeSelectorTerm]] = (),
) -> Affinity:
    """Node affinity with ``required`` terms (None: no required affinity) and
    ``(weight, term)`` preferred terms."""
    selector = None if required is None else NodeSelector(node_selector_terms=list(required))
    return Affinity(
        node_affinity=NodeAffinity(
            required_during_scheduling_ignored_during_execution=selector,
            preferred_during_scheduling_ignored_during_execution=[
                PreferredSchedulingTerm(weight=w, preference=t) for w, t in preferred
            ],
        )
    )


def pod_affinity(
    required: Iterable[PodAffinityTerm] = (),
    *,
    anti: Iterable[PodAffinityTerm] = (),
    preferred: Iterable[tuple[int, PodAffinityTerm]] = (),
    preferred_anti: Iterable[tuple[int, PodAffinityTerm]] = (),
) -> Affinity | None:
    """Inter-pod affinity (upstream's ``.PodAffinity`` / ``.PodAntiAffinity``):
    ``required`` and ``anti`` terms, ``(weight, term)`` ``preferred`` and
    ``preferred_anti`` ones; None when there is no term at all."""
    required, anti = list(required), list(anti)
    weighted = [WeightedPodAffinityTerm(weight=w, pod_affinity_term=t) for w, t in preferred]
    weighted_anti = [
        WeightedPodAffinityTerm(weight=w, pod_affinity_term=t) for w, t in preferred_anti
    ]
    if not (required or anti or weighted or weighted_anti):
        return None
    return Affinity(
        pod_affinity=PodAffinity(
            required_during_scheduling_ignored_during_execution=required,
            preferred_during_scheduling_ignored_during_execution=weighted,
        )
        if required or weighted
        else None,
        pod_anti_affinity=PodAffinity(
            required_during_scheduling_ignored_during_execution=anti,
            preferred_during_scheduling_ignored_during_execution=weighted_anti,
        )
        if anti or weighted_anti
        else None,
    )
