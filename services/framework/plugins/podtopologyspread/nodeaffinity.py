"""The pod's required node affinity over every node at once (``GetRequiredNodeAffinity``).

A node matches when it has every ``nodeSelector`` label and, if the pod has a required
``nodeAffinity``, at least one of its terms. As upstream's ``LazyErrorNodeSelector``, a
term with an invalid requirement matches no node (the error is ignored, for backwards
compatibility) and an empty term selects nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from contracts.k8s import NodeSelectorRequirement, NodeSelectorTerm, Pod
from services.framework.attributes import BoolArray
from services.framework.nodeinfo import NodeTable
from services.framework.plugins.podtopologyspread.names import (
    label_value_errors,
    qualified_name_errors,
)

_INT64 = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NAME_FIELD = "metadata.name"


class _Invalid(Exception):
    """A requirement upstream fails to parse: its term matches nothing."""


def _parse_int(value: str) -> int | None:
    """``strconv.ParseInt(value, 10, 64)``, None on error."""
    if not _INT64.match(value):
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def required_affinity_rows(pod: Pod, nodes: NodeTable) -> BoolArray | None:
    """Rows matching the pod's required node affinity; None when every node does."""
    affinity = pod.spec.affinity
    required = None
    if affinity is not None and affinity.node_affinity is not None:
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if not pod.spec.node_selector and required is None:
        return None
    mask = np.ones(nodes.num_nodes, dtype=np.bool_)
    for key, value in pod.spec.node_selector.items():
        column = nodes.attributes.label(key)
        code = column.code_of(value)
        if code < 0:  # no node has it; -1 would match the nodes lacking the key
            return np.zeros(nodes.num_nodes, dtype=np.bool_)
        mask &= column.codes == code
    if required is not None:
        mask &= _any_term(required.node_selector_terms, nodes)
    return mask


def _any_term(terms: Sequence[NodeSelectorTerm], nodes: NodeTable) -> BoolArray:
    matched = np.zeros(nodes.num_nodes, dtype=np.bool_)
    for term in terms:
        if not term.match_expressions and not term.match_fields:
            continue
        try:
            term_mask = np.ones(nodes.num_nodes, dtype=np.bool_)
            for expr in term.match_expressions:
                term_mask &= _label_requirement(expr, nodes)
            for expr in term.match_fields:
                term_mask &= _field_requirement(expr, nodes)
        except _Invalid:
            continue
        matched |= term_mask
    return matched


def _label_requirement(expr: NodeSelectorRequirement, nodes: NodeTable) -> BoolArray:
    """``nodeSelectorRequirementsAsSelector`` for one requirement, over all rows."""
    values = expr.values
    if qualified_name_errors(expr.key) or any(label_value_errors(v) for v in values):
        raise _Invalid
    column = nodes.attributes.label(expr.key)
    match expr.operator:
        case "In" | "NotIn":
            if not values:
                raise _Invalid
            within = column.matches(values)
            return within if expr.operator == "In" else ~within
        case "Exists" | "DoesNotExist":
            if values:
                raise _Invalid
            return column.present() if expr.operator == "Exists" else ~column.present()
        case "Gt" | "Lt":
            bound = _parse_int(values[0]) if len(values) == 1 else None
            if bound is None:
                raise _Invalid
            by_value = [_parse_int(v) for v in column.values]
            if expr.operator == "Gt":
                ok = [v is not None and v > bound for v in by_value]
            else:
                ok = [v is not None and v < bound for v in by_value]
            lookup = np.asarray([*ok, False], dtype=np.bool_)
            return lookup[column.codes]  # -1 (no label) picks the trailing False
        case _:
            raise _Invalid


def _field_requirement(expr: NodeSelectorRequirement, nodes: NodeTable) -> BoolArray:
    """``nodeSelectorRequirementsAsFieldSelector``: only ``metadata.name`` In/NotIn one
    value."""
    if expr.key != _NAME_FIELD or expr.operator not in ("In", "NotIn") or len(expr.values) != 1:
        raise _Invalid
    mask = np.zeros(nodes.num_nodes, dtype=np.bool_)
    row = nodes.index.get(expr.values[0])
    if row is not None:
        mask[row] = True
    return mask if expr.operator == "In" else ~mask
