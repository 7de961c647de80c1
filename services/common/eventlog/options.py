"""What opening a stream event log takes (no broker client imported here)."""

from __future__ import annotations

from dataclasses import dataclass

from services.common.tls import NO_TLS_FILES, TLSFiles

DEFAULT_NAME = "ksched.eventlog"
"""The stream ``stream://`` alone names."""


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """How to reach and shape a stream log (from Settings, at the CLI's edge)."""

    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    """``KSCHED_AMQP_URL``: one broker, or the comma-separated nodes of a cluster."""
    namespace: str = ""
    """``KSCHED_NAMESPACE``: prefixes the stream's name, as every queue's."""
    tls: TLSFiles = NO_TLS_FILES
    max_age: str = ""
    """``KSCHED_STREAM_MAX_AGE`` (``x-max-age``: ``7D``, ``12h``); empty: kept for ever."""
    max_length_bytes: int = 0
    """``KSCHED_STREAM_MAX_LENGTH_BYTES`` (``x-max-length-bytes``); 0: no limit."""


def stream_name(spec: str) -> str:
    """The stream a ``stream://NAME`` spec names (``stream://`` alone: the default)."""
    return spec.removeprefix("stream://").strip("/") or DEFAULT_NAME
