"""Whether a plugin implements an optional hook (a ``runtime_checkable`` Protocol),
asked once per plugin class: ``isinstance`` against such a Protocol remembers the
classes that matched, but inspects every member again for one that does not (about
20 microseconds each time here), which a check per pod or per batch pays again and
again. A plugin class is a fixed set of methods and class attributes, so
the answer for one instance is the answer for its class."""

from __future__ import annotations

_KNOWN: dict[tuple[type, type], bool] = {}


def implements(obj: object, protocol: type) -> bool:
    """``isinstance(obj, protocol)``, remembered for ``type(obj)`` (the caller casts
    ``obj`` to the protocol: a Protocol is no concrete type to narrow to)."""
    key = (type(obj), protocol)
    known = _KNOWN.get(key)
    if known is None:
        known = _KNOWN[key] = isinstance(obj, protocol)
    return known


__all__ = ["implements"]
