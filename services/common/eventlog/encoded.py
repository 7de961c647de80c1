"""Log entries encoded once: the informer encodes each object once (to compare it with
the stored one) and reuses those bytes for the log's line, the store's body and the
``ClusterBatch`` on ``ksched.cluster``, instead of encoding the same object three times.

:func:`entry_line` builds an entry's JSON around its object's bytes: the same bytes
``msgspec.json.encode(entry)`` gives (the tag first, then the fields in their order,
defaults left out, camelCase), which tests/unit/eventlog/test_encoded.py checks for every
kind. :func:`batch_body` joins lines into a ``ClusterBatch`` the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from contracts.events import LogEntry


class _EntryJSON(msgspec.Struct, kw_only=True, frozen=True, rename="camel", omit_defaults=True):
    """A LogEntry's wire shape with its object already encoded (see the module)."""

    kind: str
    seq: int
    type: str
    at: float = 0.0
    trace: dict[str, str] = {}
    origin: str = "user"
    object: msgspec.Raw


_encoder = msgspec.json.Encoder()


def entry_line(entry: LogEntry, encoded_object: bytes) -> bytes:
    """``entry`` as JSON (no newline), its object being ``encoded_object``."""
    # Only values that differ from the defaults are passed: omit_defaults leaves a field
    # out when its value is the default itself, which an equal float need not be.
    optional: dict[str, object] = {}
    if entry.at != 0.0:
        optional["at"] = entry.at
    if entry.trace:
        optional["trace"] = entry.trace
    if entry.origin != "user":
        optional["origin"] = entry.origin
    return _encoder.encode(
        _EntryJSON(
            kind=str(entry.__struct_config__.tag),
            seq=entry.seq,
            type=entry.type,
            object=msgspec.Raw(encoded_object),
            **optional,  # type: ignore[arg-type]
        )
    )


def entry_lines(entries: Sequence[LogEntry]) -> list[bytes]:
    """Each entry as JSON, encoded from scratch (for entries not made by the informer)."""
    return [_encoder.encode(entry) for entry in entries]


def batch_body(lines: Sequence[bytes]) -> bytes:
    """The JSON of a ``ClusterBatch`` of the entries whose lines are ``lines``."""
    return b'{"kind":"ClusterBatch","events":[' + b",".join(lines) + b"]}"


__all__ = ["batch_body", "entry_line", "entry_lines"]
