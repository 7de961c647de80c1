"""Go's integer division on int64 arrays, which upstream's score arithmetic relies on."""

from __future__ import annotations

import numpy as np

from services.framework.api.types import Int64Array


def go_div(a: Int64Array, b: Int64Array | int) -> Int64Array:
    """Integer division truncating toward zero, as Go's ``/`` on int64 (NumPy floors).
    The scores only divide non-negative numbers, where both agree: that case is a
    single floor division."""
    b_negative = b < 0 if isinstance(b, int) else bool(np.min(b) < 0)
    if not b_negative and (a.size == 0 or a.min() >= 0):
        floored: Int64Array = np.floor_divide(a, b)
        return floored
    quotient, remainder = np.divmod(a, b)
    truncated: Int64Array = quotient + ((remainder != 0) & ((a < 0) != (np.asarray(b) < 0)))
    return truncated
