"""What the framework needs to word a waiting pod's fate as upstream does."""

from __future__ import annotations


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String()``: ``1m0s``, ``1.5s``, ``500ms``,
    ``2h0m0s``, ``0s`` (upstream's timeout message prints the wait this way)."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size or unit == "ns":
                return sign + _fraction(nanos, size) + unit
    whole, frac = divmod(nanos, 1_000_000_000)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = _fraction(secs * 1_000_000_000 + frac, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _fraction(value: int, unit: int) -> str:
    """``value / unit`` in decimal without trailing zeros (Go's ``fmtFrac``)."""
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")
