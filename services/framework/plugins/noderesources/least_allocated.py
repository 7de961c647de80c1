"""LeastAllocated: favour nodes with more unrequested capacity (spreading).

Per resource, ``((capacity - requested) * MaxNodeScore) / capacity``, 0 when the
request exceeds capacity; the node score is the weighted average over the resources
the node has: ``sum(score * weight) / sum(weight)`` (integer division).
"""

from __future__ import annotations

import numpy as np

from services.framework.api.types import MAX_NODE_SCORE, Int64Array
from services.framework.plugins.helper.intdiv import go_div


def least_requested_score(requested: Int64Array, capacity: Int64Array) -> Int64Array:
    """``leastRequestedScore`` over arrays (capacity is never 0 here)."""
    # An over-requested node has no room left: clamping it to 0 gives its 0 score and
    # keeps the division on non-negative numbers (one floor division).
    free = np.maximum(capacity - requested, 0)
    return go_div(free * MAX_NODE_SCORE, capacity)
