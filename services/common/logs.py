"""Log records as text (the default) or as JSON lines, for ``--log-format``.

A JSON record is one object per line: ``time`` (RFC 3339, UTC, microseconds),
``level``, ``logger``, ``message``, ``service`` (the same ``service.name`` as the
process's spans), ``trace_id`` and ``span_id`` when logged inside a span (hex, as
OpenTelemetry prints them), ``pod`` (``namespace/name``) when the call passes one
(``log.warning(..., extra={"pod": key})``) and ``exception`` with the traceback when
there is one. Records stay redacted (services.common.redact works on the record).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Final, Literal

from opentelemetry import trace

LogFormat = Literal["text", "json"]
FORMATS: Final = ("text", "json")
POD: Final = "pod"
"""The ``extra`` key a log call names its pod with."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module's docstring)."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="microseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "service": self.service,
        }
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            out["trace_id"] = trace.format_trace_id(context.trace_id)
            out["span_id"] = trace.format_span_id(context.span_id)
        pod = getattr(record, POD, None)
        if pod:
            out[POD] = str(pod)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: int, log_format: str, *, service: str, text: str) -> None:
    """Log ``level`` and above to stderr: as JSON lines (``log_format="json"``) naming
    ``service``, else as ``text`` (a %-style format)."""
    if log_format == "json":
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter(service))
        logging.basicConfig(level=level, handlers=[handler])
    else:
        logging.basicConfig(level=level, format=text)
