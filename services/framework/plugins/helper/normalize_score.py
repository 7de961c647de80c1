"""``DefaultNormalizeScore``: scale raw scores from ``[0, max]`` onto ``[0, max_priority]``."""

from __future__ import annotations

import numpy as np

from services.framework.api.types import Int64Array
from services.framework.plugins.helper.intdiv import go_div


def default_normalize_score(max_priority: int, reverse: bool, scores: Int64Array) -> Int64Array:
    """``max_priority * score / max(scores)`` in Go's integer division, then
    ``max_priority - score`` if ``reverse``. When every score is 0 (or the list is
    empty) the scores stay 0, or all become ``max_priority`` with ``reverse``."""
    max_count = int(scores.max(initial=0))
    if max_count == 0:
        return np.full(len(scores), max_priority, np.int64) if reverse else scores
    scaled = go_div(max_priority * scores, max_count)
    return max_priority - scaled if reverse else scaled
