"""Compiled node selector terms (:mod:`services.common.k8s.nodeaffinity`) evaluated over
every node at once.

Each function gives the same answer as the term's ``matches`` gives one node. The
compiled terms are frozen, hashable values, so a mask computed over the nodes is
memoized in :class:`~services.framework.cache.attributes.NodeAttributes` and reused by
every pod with the same selector until a node changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from services.common.k8s.nodeaffinity import (
    OBJECT_NAME_FIELD,
    FieldRequirement,
    LabelRequirement,
    PreferredTerm,
    RequiredNodeAffinity,
    Term,
)
from services.common.k8s.validation import parse_int64
from services.framework.api.types import Int64Array
from services.framework.cache.attributes import BoolArray, NodeAttributes
from services.framework.cache.snapshot import Snapshot


def label_mask(requirement: LabelRequirement, attributes: NodeAttributes) -> BoolArray:
    column = attributes.label(requirement.key)
    match requirement.operator:
        case "In":
            return column.matches(requirement.values)
        case "NotIn":
            return ~column.matches(requirement.values)
        case "Exists":
            return column.present()
        case "DoesNotExist":
            return ~column.present()
    bound = parse_int64(requirement.values[0])
    assert bound is not None  # validated at compile time
    parsed = [parse_int64(v) for v in column.values]
    if requirement.operator == "Gt":
        keep = [p is not None and p > bound for p in parsed]
    else:
        keep = [p is not None and p < bound for p in parsed]
    return column.where_value(np.asarray(keep, dtype=np.bool_))


def field_mask(requirement: FieldRequirement, nodes: Snapshot) -> BoolArray:
    if requirement.key == OBJECT_NAME_FIELD:
        equal = np.zeros(nodes.num_nodes, dtype=np.bool_)
        row = nodes.index.get(requirement.value)
        if row is not None:
            equal[row] = True
    else:
        equal = np.full(nodes.num_nodes, requirement.value == "", dtype=np.bool_)
    return equal if requirement.operator == "In" else ~equal


def names_field_mask(requirement: FieldRequirement, names: Sequence[str]) -> BoolArray:
    """:func:`field_mask` for rows named ``names`` (a node without a name reads as "")."""
    wanted = requirement.value
    if requirement.key == OBJECT_NAME_FIELD:
        equal = np.fromiter((name == wanted for name in names), np.bool_, len(names))
    else:
        equal = np.full(len(names), wanted == "", dtype=np.bool_)
    return equal if requirement.operator == "In" else ~equal


def _term_mask(
    term: Term, attributes: NodeAttributes, fields: Callable[[FieldRequirement], BoolArray]
) -> BoolArray:
    mask = np.full(attributes.num_nodes, not term.errors, dtype=np.bool_)
    if term.errors:
        return mask
    for label in term.labels or ():
        mask &= label_mask(label, attributes)
    for field in term.fields or ():
        mask &= fields(field)
    return mask


def term_mask(term: Term, nodes: Snapshot) -> BoolArray:
    return _term_mask(term, nodes.attributes, lambda field: field_mask(field, nodes))


def named_terms_mask(
    terms: tuple[Term, ...], attributes: NodeAttributes, names: Sequence[str]
) -> BoolArray:
    """:func:`terms_mask` over node attributes whose rows are named ``names``."""
    mask = np.zeros(attributes.num_nodes, dtype=np.bool_)
    for term in terms:
        mask |= _term_mask(term, attributes, lambda field: names_field_mask(field, names))
    return mask


def terms_mask(terms: tuple[Term, ...], nodes: Snapshot) -> BoolArray:
    """Nodes matched by any of ``terms`` (none when there are no terms)."""
    mask = np.zeros(nodes.num_nodes, dtype=np.bool_)
    for term in terms:
        mask |= term_mask(term, nodes)
    return mask


def preferred_scores(terms: tuple[PreferredTerm, ...], nodes: Snapshot) -> Int64Array:
    """``PreferredSchedulingTerms.Score`` for every node: the matching terms' weights."""
    total = np.zeros(nodes.num_nodes, dtype=np.int64)
    for preferred in terms:
        total += term_mask(preferred.term, nodes) * np.int64(preferred.weight)
    return total


def required_mask(required: RequiredNodeAffinity, nodes: Snapshot) -> BoolArray:
    """``RequiredNodeAffinity.Match`` for every node (the nodeSelector's labels AND the
    required terms). Memoized for as long as the nodes stay: never modify the result."""

    def build() -> BoolArray:
        mask = np.ones(nodes.num_nodes, dtype=np.bool_)
        for key, value in required.node_selector:
            column = nodes.attributes.label(key)
            code = column.code_of(value)
            mask &= column.codes == code if code >= 0 else False
        if required.terms is not None:
            mask &= terms_mask(required.terms, nodes)
        return mask

    return nodes.attributes.memo(("nodeaffinity.required", required), build)
