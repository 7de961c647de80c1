"""Selectors in a line: label selector requirements (``in_("app", "web")``,
``exists("tier")``) and node affinity (``affinity([term(req("zone", "In", "a"))])``)."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.k8s import (
    Affinity,
    LabelSelectorRequirement,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
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
