"""Node selectors and topology terms over every node at once.

A term (``NodeSelectorTerm``) is the AND of its requirements; a selector is the OR of
its terms, and a term with no requirement, or one that does not parse (``In`` without
values, ``Gt`` with a non-integer…), selects no node, as upstream's lazy-error
``nodeaffinity.NodeSelector``. Label requirements follow ``labels.Requirement``:
``NotIn`` and ``DoesNotExist`` match nodes without the label; ``Gt`` / ``Lt`` compare
integers. Each requirement is decided once per distinct label value, then spread over
the rows through the label's codes (see framework.attributes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from contracts.k8s import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from contracts.k8s.storage import TopologySelectorTerm
from services.framework.cache.attributes import BoolArray, NodeAttributes

NODE_NAME_FIELD = "metadata.name"


def _integer(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


def _value_test(req: NodeSelectorRequirement) -> tuple[Callable[[str], bool], bool] | None:
    """(test for a present label value, result for nodes without the label); None if
    the requirement does not parse."""
    values = set(req.values)
    match req.operator:
        case "In" if values:
            return (lambda v: v in values), False
        case "NotIn" if values:
            return (lambda v: v not in values), True
        case "Exists" if not values:
            return (lambda _v: True), False
        case "DoesNotExist" if not values:
            return (lambda _v: False), True
        case "Gt" | "Lt" if len(req.values) == 1:
            bound = _integer(req.values[0])
            if bound is None:
                return None
            greater = req.operator == "Gt"

            def compare(v: str) -> bool:
                number = _integer(v)
                return number is not None and (number > bound if greater else number < bound)

            return compare, False
    return None


def _label_mask(req: NodeSelectorRequirement, attrs: NodeAttributes) -> BoolArray | None:
    test = _value_test(req)
    if test is None:
        return None
    check, absent = test
    column = attrs.label(req.key)
    if req.operator in ("In", "NotIn"):  # a lookup per wanted value, not per node value
        found = column.matches(req.values)
        return found if req.operator == "In" else ~found
    if req.operator in ("Exists", "DoesNotExist"):
        present = column.present()
        return present if req.operator == "Exists" else ~present
    per_value = np.fromiter((check(v) for v in column.values), np.bool_, len(column.values))
    if not len(per_value):
        return np.full(attrs.num_nodes, absent, dtype=np.bool_)
    return np.where(column.codes >= 0, per_value[np.maximum(column.codes, 0)], absent)


def _field_mask(req: NodeSelectorRequirement, names: Sequence[str]) -> BoolArray | None:
    if len(req.values) != 1 or req.operator not in ("In", "NotIn"):
        return None
    equal = np.fromiter(
        ((name if req.key == NODE_NAME_FIELD else "") == req.values[0] for name in names),
        np.bool_,
        len(names),
    )
    return equal if req.operator == "In" else ~equal


def term_mask(term: NodeSelectorTerm, attrs: NodeAttributes, names: Sequence[str]) -> BoolArray:
    """Rows matching every requirement of ``term`` (none for an empty or invalid term)."""
    mask = np.ones(attrs.num_nodes, dtype=np.bool_)
    if not term.match_expressions and not term.match_fields:
        return ~mask
    for req in term.match_expressions:
        part = _label_mask(req, attrs)
        if part is None:
            return np.zeros(attrs.num_nodes, dtype=np.bool_)
        mask &= part
    for req in term.match_fields:
        part = _field_mask(req, names)
        if part is None:
            return np.zeros(attrs.num_nodes, dtype=np.bool_)
        mask &= part
    return mask


def node_selector_mask(
    selector: NodeSelector, attrs: NodeAttributes, names: Sequence[str] | None = None
) -> BoolArray:
    """Rows matching ``selector``. ``names`` are the rows' node names for
    ``matchFields``; None matches fields against an empty name, as upstream's
    ``CheckNodeAffinity`` does for a volume (it only passes the node's labels)."""
    field_names: Sequence[str] = names if names is not None else [""] * attrs.num_nodes
    mask = np.zeros(attrs.num_nodes, dtype=np.bool_)
    for term in selector.node_selector_terms:
        mask |= term_mask(term, attrs, field_names)
    return mask


def topology_mask(terms: Sequence[TopologySelectorTerm], attrs: NodeAttributes) -> BoolArray:
    """``MatchTopologySelectorTerms``: no terms match every node; otherwise a node must
    have, for every expression of some non-empty term, one of its values."""
    if not terms:
        return np.ones(attrs.num_nodes, dtype=np.bool_)
    mask = np.zeros(attrs.num_nodes, dtype=np.bool_)
    for term in terms:
        if not term.match_label_expressions:
            continue
        part = np.ones(attrs.num_nodes, dtype=np.bool_)
        for expr in term.match_label_expressions:
            part &= attrs.label(expr.key).matches(expr.values)
        mask |= part
    return mask
