"""Go's ``time.Duration`` as configuration files spell it (``metav1.Duration``):
parsed as ``time.ParseDuration`` and printed as ``Duration.String``."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Final

_DURATION = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+")
_UNIT = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_SECONDS: Final = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0
}  # fmt: skip


def parse_go_duration(text: str) -> float | None:
    """A Go duration (``1m30s``, ``-2.5h``, ``0``) in seconds; None if it is not one."""
    if text in ("0", "+0", "-0"):
        return 0.0
    if not _DURATION.fullmatch(text):
        return None
    seconds = sum(float(number) * _SECONDS[unit] for number, unit in _UNIT.findall(text))
    return -seconds if text.startswith("-") else seconds


def format_go_duration(seconds: float) -> str:
    """``Duration.String``: ``1m30s``, ``500ms``, ``-1s``, ``0s``."""
    nanos = int((Decimal(repr(seconds)) * 1_000_000_000).to_integral_value())
    if nanos == 0:
        return "0s"
    sign, nanos = ("-" if nanos < 0 else ""), abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _fraction(nanos, size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _fraction(rest, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _fraction(value: int, size: int) -> str:
    whole, frac = divmod(value, size)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(size)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
