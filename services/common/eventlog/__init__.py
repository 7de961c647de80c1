"""The informer's append-only, sequenced event log (file-backed, or in memory for tests).
``open_event_log(spec)`` picks the implementation: ``memory://`` or a file path.

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


def open_event_log(spec: str) -> EventLog:
    """``memory://`` → a MemoryEventLog; anything else is the path of a FileEventLog,
    created if missing and recovered if a crash tore its last line (this blocks while
    it scans the file; use ``await FileEventLog.open(path)`` from a running loop)."""
    if spec.startswith("memory://"):
        return MemoryEventLog()
    return FileEventLog(spec)


__all__ = [
    "EventLog",
    "FileEventLog",
    "LogFencedError",
    "LogMismatchError",
    "LogSequenceError",
    "LogWriteError",
    "MemoryEventLog",
    "check_matches",
    "open_event_log",
    "read_all",
]
