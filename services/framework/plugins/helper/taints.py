"""Taints and tolerations, as ``v1.Toleration.ToleratesTaint`` decides.

A toleration matches a taint when its effect is empty or equal, its key is empty or
equal, and its operator is ``Exists``, or ``Equal`` (also the empty operator) with an
equal value. An empty key with ``Exists`` therefore tolerates every taint. The ``Lt`` /
``Gt`` operators belong to the alpha TaintTolerationComparisonOperators gate, off by
default: like upstream with the gate off, they tolerate nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np

from contracts.k8s import Toleration
from services.framework.cache.attributes import BoolArray, NodeAttributes, TaintKey

NO_SCHEDULE: Final = "NoSchedule"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
NO_EXECUTE: Final = "NoExecute"
DO_NOT_SCHEDULE: Final = frozenset({NO_SCHEDULE, NO_EXECUTE})
"""``helper.DoNotScheduleTaintsFilterFunc``: the effects Filter plugins look at."""
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"

TolerationKey = tuple[str, str, str, str]
"""A toleration as (key, operator, value, effect), empty strings for unset fields."""


def toleration_key(toleration: Toleration) -> TolerationKey:
    return (
        toleration.key or "",
        toleration.operator or "",
        toleration.value or "",
        toleration.effect or "",
    )


def tolerations_of(tolerations: Iterable[Toleration]) -> tuple[TolerationKey, ...]:
    """The pod's tolerations in a hashable form (for memo keys)."""
    return tuple(toleration_key(t) for t in tolerations)


def tolerates(toleration: TolerationKey, taint: TaintKey) -> bool:
    """``Toleration.ToleratesTaint``."""
    key, operator, value, effect = toleration
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    if operator in ("", "Equal"):
        return value == taint.value
    return operator == "Exists"


def tolerations_tolerate(tolerations: Sequence[TolerationKey], taint: TaintKey) -> bool:
    """``TolerationsTolerateTaint``: does any toleration tolerate ``taint``?"""
    return any(tolerates(t, taint) for t in tolerations)


def untolerated_rows(tolerations: Sequence[TolerationKey], nodes: NodeAttributes) -> BoolArray:
    """Per row: the node has a NoSchedule/NoExecute taint none of ``tolerations``
    tolerates (``FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc``).
    Cached on the node attributes, so TaintToleration's Filter and PodTopologySpread's
    ``nodeTaintsPolicy: Honor`` share one answer per set of tolerations."""

    def build() -> BoolArray:
        index = nodes.taints()
        bad = np.fromiter(
            (
                t.effect in DO_NOT_SCHEDULE and not tolerations_tolerate(tolerations, t)
                for t in index.taints
            ),
            dtype=np.bool_,
            count=len(index.taints),
        )
        return index.rows_having(bad)

    return nodes.memo(("helper.taints.untolerated", tuple(tolerations)), build)
