"""``nodeTaintsPolicy: Honor``: which nodes' NoSchedule/NoExecute taints the pod tolerates.

Nodes are grouped by their set of such taints once per :class:`NodeAttributes` (that is,
once per change of the node objects, not per scheduling cycle), so a cycle checks the
pod's tolerations against each distinct taint set, not against every node.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from contracts.k8s import Node, Taint, Toleration
from services.framework.attributes import BoolArray, Int32Array, NodeAttributes, TaintKey
from services.framework.nodeinfo import NodeTable
from services.framework.plugins.helper.taints import tolerations_of, tolerations_tolerate

_FILTERED_EFFECTS = ("NoSchedule", "NoExecute")
TaintSet = tuple[tuple[str, str, str], ...]
_groups: weakref.WeakKeyDictionary[NodeAttributes, tuple[Int32Array, list[TaintSet]]] = (
    weakref.WeakKeyDictionary()
)


def _taint_set(taints: Sequence[Taint]) -> TaintSet:
    """``DoNotScheduleTaintsFilterFunc``: the taints that count, as hashable tuples."""
    kept = {(t.key, t.value or "", t.effect) for t in taints if t.effect in _FILTERED_EFFECTS}
    return tuple(sorted(kept))


def tolerates_all(tolerations: Sequence[Toleration], taints: TaintSet) -> bool:
    """``FindMatchingUntoleratedTaint`` finds nothing."""
    keys = tolerations_of(tolerations)
    return all(tolerations_tolerate(keys, TaintKey(*taint)) for taint in taints)


def node_tolerated(tolerations: Sequence[Toleration], node: Node) -> bool:
    return tolerates_all(tolerations, _taint_set(node.spec.taints))


def tolerated_rows(tolerations: Sequence[Toleration], nodes: NodeTable) -> BoolArray:
    """Per row: the pod tolerates every NoSchedule/NoExecute taint of the node."""
    codes, groups = _grouped(nodes)
    ok = np.asarray([tolerates_all(tolerations, g) for g in groups], dtype=np.bool_)
    return ok[codes]


def _grouped(nodes: NodeTable) -> tuple[Int32Array, list[TaintSet]]:
    cached = _groups.get(nodes.attributes)
    if cached is None:
        index: dict[TaintSet, int] = {}
        codes = np.fromiter(
            (index.setdefault(_taint_set(n.spec.taints), len(index)) for n in nodes.nodes),
            dtype=np.int32,
            count=nodes.num_nodes,
        )
        cached = _groups[nodes.attributes] = (codes, list(index))
    return cached
