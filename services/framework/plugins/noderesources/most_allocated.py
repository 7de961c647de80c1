"""MostAllocated: favour nodes with more requested capacity (bin packing).

Per resource, ``(requested * MaxNodeScore) / capacity`` with the request capped at the
capacity (pods without requests get non-zero defaults and may overshoot); the node
score is the weighted average over the resources the node has.
"""

from __future__ import annotations

import numpy as np

from services.framework.api.types import MAX_NODE_SCORE, Int64Array
from services.framework.plugins.helper.intdiv import go_div


def most_requested_score(requested: Int64Array, capacity: Int64Array) -> Int64Array:
    """``mostRequestedScore`` over arrays (capacity is never 0 here)."""
    return go_div(np.minimum(requested, capacity) * MAX_NODE_SCORE, capacity)
