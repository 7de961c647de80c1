"""Node selector terms compiled once per pod and evaluated over every node at once.

Semantics are ``component-helpers/scheduling/corev1/nodeaffinity``: terms are ORed,
a term's requirements ANDed; an empty term (no expressions, no fields) is dropped and
a selector without terms matches nothing; a term with a parse error matches nothing.
``matchFields`` see one field, ``metadata.name``; any other key reads as "".

Every compiled object is a frozen, hashable value, so a mask computed over the nodes
is memoized in :class:`~services.framework.cache.attributes.NodeAttributes` and
reused by every pod with the same selector until a node changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from contracts.k8s import Node, NodeSelectorTerm, PreferredSchedulingTerm
from services.framework.api.registry import join_path
from services.framework.api.types import Int64Array
from services.framework.cache.attributes import BoolArray, NodeAttributes
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.nodeaffinity.validation import (
    FieldError,
    check_field_requirement,
    check_label_requirement,
    parse_int64,
)

OBJECT_NAME_FIELD: Final = "metadata.name"


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One valid ``matchExpressions`` entry."""

    key: str
    operator: str
    values: tuple[str, ...]

    def mask(self, attributes: NodeAttributes) -> BoolArray:
        column = attributes.label(self.key)
        match self.operator:
            case "In":
                return column.matches(self.values)
            case "NotIn":
                return ~column.matches(self.values)
            case "Exists":
                return column.present()
            case "DoesNotExist":
                return ~column.present()
        bound = parse_int64(self.values[0])
        assert bound is not None  # validated at compile time
        parsed = [parse_int64(v) for v in column.values]
        if self.operator == "Gt":
            keep = [p is not None and p > bound for p in parsed]
        else:
            keep = [p is not None and p < bound for p in parsed]
        return column.where_value(np.asarray(keep, dtype=np.bool_))

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

    def mask(self, nodes: Snapshot) -> BoolArray:
        if self.key == OBJECT_NAME_FIELD:
            equal = np.zeros(nodes.num_nodes, dtype=np.bool_)
            row = nodes.index.get(self.value)
            if row is not None:
                equal[row] = True
        else:
            equal = np.full(nodes.num_nodes, self.value == "", dtype=np.bool_)
        return equal if self.operator == "In" else ~equal

    def matches(self, node_name: str) -> bool:
        field = node_name if self.key == OBJECT_NAME_FIELD else ""
        return (field == self.value) == (self.operator == "In")


@dataclass(frozen=True, slots=True)
class Term:
    """A compiled ``NodeSelectorTerm``; None for a part the term does not have."""

    labels: tuple[LabelRequirement, ...] | None
    fields: tuple[FieldRequirement, ...] | None
    errors: tuple[FieldError, ...] = ()

    def mask(self, nodes: Snapshot) -> BoolArray:
        mask = np.full(nodes.num_nodes, not self.errors, dtype=np.bool_)
        if self.errors:
            return mask
        for label in self.labels or ():
            mask &= label.mask(nodes.attributes)
        for field in self.fields or ():
            mask &= field.mask(nodes)
        return mask

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


def terms_mask(terms: tuple[Term, ...], nodes: Snapshot) -> BoolArray:
    """Nodes matched by any of ``terms`` (none when there are no terms)."""
    mask = np.zeros(nodes.num_nodes, dtype=np.bool_)
    for term in terms:
        mask |= term.mask(nodes)
    return mask


def terms_match(terms: tuple[Term, ...], node: Node) -> bool:
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


def preferred_scores(terms: tuple[PreferredTerm, ...], nodes: Snapshot) -> Int64Array:
    """``PreferredSchedulingTerms.Score`` for every node: the matching terms' weights."""
    total = np.zeros(nodes.num_nodes, dtype=np.int64)
    for preferred in terms:
        total += preferred.term.mask(nodes) * np.int64(preferred.weight)
    return total
