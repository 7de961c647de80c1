"""The informer's append-only, sequenced event log: a RabbitMQ stream (production, several
machines), a file (one machine, the default) or memory (tests). ``open_event_log(spec)``
picks the implementation: ``stream://NAME``, ``memory://`` or a file path.

Not here: what goes into the log (the informer) or following it
(:mod:`services.common.projection`).
"""

from services.common.eventlog.base import (
    EventLog,
    LogFencedError,
    LogMismatchError,
    LogSequenceError,
    LogWriteError,
    check_matches,
    read_all,
)
from services.common.eventlog.file import FileEventLog
from services.common.eventlog.memory import MemoryEventLog
from services.common.eventlog.options import StreamOptions, stream_name

STREAM = "stream://"


def is_stream(spec: str) -> bool:
    """Whether ``spec`` names a stream log (``stream://NAME``)."""
    return spec.startswith(STREAM)


def open_event_log(spec: str, *, stream: StreamOptions | None = None) -> EventLog:
    """``memory://`` → a MemoryEventLog; ``stream://NAME`` → a StreamEventLog on the
    broker ``stream`` names (not connected yet: ``await log.connect()``); anything else is
    the path of a FileEventLog, created if missing and recovered if a crash tore its last
    line (this blocks while it scans the file; use ``await FileEventLog.open(path)`` from
    a running loop)."""
    if spec.startswith("memory://"):
        return MemoryEventLog()
    if is_stream(spec):
        from services.common.eventlog.stream import StreamEventLog

        return StreamEventLog(stream_name(spec), stream or StreamOptions())
    return FileEventLog(spec)


__all__ = [
    "EventLog",
    "FileEventLog",
    "LogFencedError",
    "LogMismatchError",
    "LogSequenceError",
    "LogWriteError",
    "MemoryEventLog",
    "StreamOptions",
    "check_matches",
    "is_stream",
    "open_event_log",
    "read_all",
]
