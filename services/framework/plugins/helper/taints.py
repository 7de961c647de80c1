"""Taints over every node at once: which nodes carry a NoSchedule / NoExecute taint a
pod does not tolerate (the per-taint rules are :mod:`services.common.k8s.taints`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

from services.common.k8s.taints import NO_EXECUTE, NO_SCHEDULE, TolerationKey, tolerations_tolerate
from services.framework.cache.attributes import BoolArray, NodeAttributes

DO_NOT_SCHEDULE: Final = frozenset({NO_SCHEDULE, NO_EXECUTE})
"""``helper.DoNotScheduleTaintsFilterFunc``: the effects Filter plugins look at."""


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
