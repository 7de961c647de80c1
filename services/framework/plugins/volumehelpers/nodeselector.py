"""A volume's node affinity and a class's allowed topologies over every node at once.

The node selector is compiled as upstream's lazy-error ``nodeaffinity.NodeSelector``
(:mod:`services.common.k8s.nodeaffinity`: a term with no requirement, or one that does
not parse, selects no node) and evaluated by the NodeAffinity plugin's masks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contracts.k8s import NodeSelector
from contracts.k8s.storage import TopologySelectorTerm
from services.common.k8s.nodeaffinity import compile_terms
from services.framework.cache.attributes import BoolArray, NodeAttributes
from services.framework.plugins.nodeaffinity.selector import named_terms_mask


def node_selector_mask(
    selector: NodeSelector, attrs: NodeAttributes, names: Sequence[str] | None = None
) -> BoolArray:
    """Rows matching ``selector``. ``names`` are the rows' node names for
    ``matchFields``; None matches fields against an empty name (``CheckNodeAffinity``
    passes only the node's labels). Note: that is how the pre-component-helpers
    ``MatchNodeSelectorTerms`` read it (no field matches); today's lazy-error selector
    skips ``matchFields`` for a node without a name. ksched keeps the former."""
    field_names: Sequence[str] = names if names is not None else [""] * attrs.num_nodes
    terms = compile_terms(selector.node_selector_terms, "")
    return named_terms_mask(terms, attrs, field_names)


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
