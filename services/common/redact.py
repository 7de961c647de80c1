"""Credentials never leave a process in text: the one place URLs are redacted.

``redact(text)`` replaces the password of every URL in ``text``
(``amqp://user:secret@host`` → ``amqp://user:***@host``, ``redis://:secret@host`` →
``redis://:***@host``) and every ``password=`` query parameter. It is applied where text
that may carry a URL leaves the process: exception messages at the bus and store edges,
every log record (:func:`install`, called by the bus and store edges), and every
report on ``ksched.errors`` (:func:`redact_report`, whose excerpt echoes user input).
Over-redacting is harmless; a leaked password is not, so the patterns are greedy.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import msgspec

from contracts.errors import ErrorReport

MASK = "***"

_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*):[^\s@]*@")
_QUERY = re.compile(r"(?P<head>[?&;]password=)[^\s&#;]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***``."""
    if "@" not in text and "password=" not in text.lower():
        return text
    text = _USERINFO.sub(rf"\g<head>:{MASK}@", text)
    return _QUERY.sub(rf"\g<head>{MASK}", text)


def redact_report(report: ErrorReport) -> ErrorReport:
    """``report`` with its reason and excerpt (user input, echoed) redacted."""
    reason, excerpt = redact(report.reason), redact(report.excerpt)
    if reason == report.reason and excerpt == report.excerpt:
        return report
    return msgspec.structs.replace(report, reason=reason, excerpt=excerpt)


def redact_record(record: logging.LogRecord) -> None:
    """Redact ``record``'s message and its traceback in place (formatted now, once)."""
    message = record.getMessage()
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
    elif record.exc_text:
        record.exc_text = redact(record.exc_text)


class RedactingFilter(logging.Filter):
    """A filter for one handler or logger: :func:`redact_record` on each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


class _RedactingFactory:
    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        redact_record(record)
        return record


def install() -> None:
    """Redact every log record this process creates, whoever logs it and wherever it
    goes (the record factory, so handlers added later and child loggers are covered).
    Idempotent; called by the bus and store edges when they are built with a URL."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _RedactingFactory):
        logging.setLogRecordFactory(_RedactingFactory(factory))
