"""A ``metav1.Time`` field (RFC 3339, ``2024-05-01T12:00:00Z``) as epoch seconds."""

from __future__ import annotations

from datetime import datetime


def parse_time(stamp: str | None) -> float | None:
    """An RFC 3339 timestamp in seconds, or None when absent or unreadable."""
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
