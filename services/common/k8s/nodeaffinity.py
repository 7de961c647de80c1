"""Node affinity as ``component-helpers/scheduling/corev1/nodeaffinity`` matches it, one
node at a time.

Terms are ORed, a term's requirements ANDed; an empty term (no expressions, no fields)
is dropped and a selector without terms matches nothing; a term with a parse error
matches nothing (``NewLazyErrorNodeSelector``). ``matchFields`` see one field,
``metadata.name``; any other key reads as "". :class:`RequiredNodeAffinity` is the
pod's ``nodeSelector`` AND its required terms (``GetRequiredNodeAffinity``).

Every compiled object is a frozen, hashable value, so the scheduler can memoize what it
computes from one over all nodes at once (``services.framework.plugins.nodeaffinity``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from contracts.k8s import Node, NodeSelector, NodeSelectorTerm, Pod, PreferredSchedulingTerm
from services.common.k8s.validation import (
    FieldError,
    check_field_requirement,
    check_label_requirement,
    join_path,
    parse_int64,
)

OBJECT_NAME_FIELD: Final = "metadata.name"


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One valid ``matchExpressions`` entry."""

    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches`` for one node's labels."""
        value = labels.get(self.key)
        match self.operator:
            case "In":
                return value is not None and value in self.values
            case "NotIn":
                return value is None or value not in self.values
            case "Exists":
                return value is not None
            case "DoesNotExist":
                return value is None
        parsed = None if value is None else parse_int64(value)
        bound = parse_int64(self.values[0])
        if parsed is None or bound is None:
            return False
        return parsed > bound if self.operator == "Gt" else parsed < bound


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One valid ``matchFields`` entry: ``key`` In / NotIn ``[value]``."""

    key: str
    operator: str
    value: str

    def matches(self, node_name: str) -> bool:
        field = node_name if self.key == OBJECT_NAME_FIELD else ""
        return (field == self.value) == (self.operator == "In")


@dataclass(frozen=True, slots=True)
class Term:
    """A compiled ``NodeSelectorTerm``; None for a part the term does not have."""

    labels: tuple[LabelRequirement, ...] | None
    fields: tuple[FieldRequirement, ...] | None
    errors: tuple[FieldError, ...] = ()

    def matches(self, node: Node) -> bool:
        if self.errors:
            return False
        labels = node.metadata.labels
        if not all(r.matches(labels) for r in self.labels or ()):
            return False
        name = node.metadata.name
        return not name or all(r.matches(name) for r in self.fields or ())


def compile_term(term: NodeSelectorTerm, path: str) -> Term:
    """``newNodeSelectorTerm``; ``path`` names the term in error messages."""
    errors: list[FieldError] = []
    labels: list[LabelRequirement] = []
    for i, req in enumerate(term.match_expressions):
        found = check_label_requirement(
            req.key, req.operator, req.values, join_path(path, f"matchExpressions[{i}]")
        )
        errors += found
        if not found:
            labels.append(LabelRequirement(req.key, req.operator, tuple(req.values)))
    fields: list[FieldRequirement] = []
    for i, req in enumerate(term.match_fields):
        found = check_field_requirement(
            req.operator, req.values, join_path(path, f"matchFields[{i}]")
        )
        errors += found
        if not found:
            fields.append(FieldRequirement(req.key, req.operator, req.values[0]))
    return Term(
        tuple(labels) if term.match_expressions else None,
        tuple(fields) if term.match_fields else None,
        tuple(errors),
    )


def is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def compile_terms(terms: Sequence[NodeSelectorTerm], path: str) -> tuple[Term, ...]:
    """``NewLazyErrorNodeSelector``: the non-empty terms, errors kept per term."""
    return tuple(
        compile_term(term, join_path(path, f"nodeSelectorTerms[{i}]"))
        for i, term in enumerate(terms)
        if not is_empty_term(term)
    )


def terms_match(terms: tuple[Term, ...], node: Node) -> bool:
    """``LazyErrorNodeSelector.Match``: any of ``terms`` matches ``node``."""
    return any(term.matches(node) for term in terms)


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    term: Term
    weight: int


def compile_preferred(
    terms: Sequence[PreferredSchedulingTerm], path: str = ""
) -> tuple[tuple[PreferredTerm, ...], tuple[FieldError, ...]]:
    """``NewPreferredSchedulingTerms``: terms of weight 0 or without requirements are
    skipped; the parse errors of the others are returned (all of them)."""
    compiled: list[PreferredTerm] = []
    errors: list[FieldError] = []
    for i, preferred in enumerate(terms):
        if preferred.weight == 0 or is_empty_term(preferred.preference):
            continue
        term = compile_term(preferred.preference, join_path(path, f"[{i}]"))
        errors += term.errors
        if not term.errors:
            compiled.append(PreferredTerm(term, preferred.weight))
    return tuple(compiled), tuple(errors)


def preferred_score(terms: tuple[PreferredTerm, ...], node: Node) -> int:
    """``PreferredSchedulingTerms.Score``: the weights of the terms ``node`` matches."""
    return sum(t.weight for t in terms if t.term.matches(node))


def required_terms(pod: Pod) -> NodeSelector | None:
    """The pod's ``requiredDuringSchedulingIgnoredDuringExecution`` node selector."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    return affinity.node_affinity.required_during_scheduling_ignored_during_execution


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: the pod's nodeSelector AND its required
    terms; ``terms`` is None when the pod has no required node affinity."""

    node_selector: tuple[tuple[str, str], ...]
    terms: tuple[Term, ...] | None

    def matches(self, node: Node) -> bool:
        """``RequiredNodeAffinity.Match``."""
        labels = node.metadata.labels
        if any(labels.get(key) != value for key, value in self.node_selector):
            return False
        return self.terms is None or terms_match(self.terms, node)


def get_required_node_affinity(pod: Pod) -> RequiredNodeAffinity:
    """``GetRequiredNodeAffinity``."""
    required = required_terms(pod)
    terms = None if required is None else compile_terms(required.node_selector_terms, "")
    return RequiredNodeAffinity(tuple(sorted(pod.spec.node_selector.items())), terms)
