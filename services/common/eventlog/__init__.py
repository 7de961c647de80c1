"""The sequenced event log (file-backed, or in memory for tests)."""

from services.common.eventlog.base import EventLog, LogSequenceError

__all__ = ["EventLog", "LogSequenceError"]
