"""Passwords in URLs never reach a log line, an exception message or an error report."""

from __future__ import annotations

import logging

import pytest

from contracts.errors import ErrorReport
from services.common import redact as redaction
from services.common.redact import redact, redact_report
from services.common.store import open_store


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("amqp://ksched:s3cret@rabbit:5672/", "amqp://ksched:***@rabbit:5672/"),
        ("amqps://u:p%40ss@h/vh", "amqps://u:***@h/vh"),
        ("redis://:s3cret@redis:6379/0", "redis://:***@redis:6379/0"),
        ("rediss://default:a/b:c@redis:6380/0", "rediss://default:***@redis:6380/0"),
        (
            "cannot connect to amqp://a:x@h1/ and redis://b:y@h2/0",
            "cannot connect to amqp://a:***@h1/ and redis://b:***@h2/0",
        ),
        ("redis://h:6379/0?password=s3cret&db=1", "redis://h:6379/0?password=***&db=1"),
        ("amqp://guest@host/", "amqp://guest@host/"),
        ("amqp://host:5672/", "amqp://host:5672/"),
        ("no url here: user@example.com", "no url here: user@example.com"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_error_report_excerpt_and_reason_are_redacted() -> None:
    report = ErrorReport(
        object_kind="pod",
        field="metadata.annotations",
        reason="bad value 'amqp://u:hunter2@h/'",
        excerpt='{"metadata":{"annotations":{"x":"redis://:hunter2@r:6379"}}}',
    )
    clean = redact_report(report)
    assert "hunter2" not in clean.reason + clean.excerpt
    assert clean.field == "metadata.annotations" and clean.object_kind == "pod"


def test_log_records_and_tracebacks_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("ksched.test.redact")
    caplog.handler.addFilter(redaction.RedactingFilter())
    logger.warning("connecting to %s", "amqp://svc:hunter2@h/")
    try:
        raise ConnectionError("refused by redis://svc:hunter2@h:6379")
    except ConnectionError:
        logger.exception("store down")
    assert "hunter2" not in caplog.text
    assert "amqp://svc:***@h/" in caplog.text
    assert "redis://svc:***@h:6379" in caplog.text


def test_install_redacts_every_record_created(caplog: pytest.LogCaptureFixture) -> None:
    before = logging.getLogRecordFactory()
    try:
        redaction.install()
        redaction.install()
        logging.getLogger("ksched.test.install").warning("url %s", "amqp://a:hunter2@h/")
        assert "hunter2" not in caplog.text and "amqp://a:***@h/" in caplog.text
    finally:
        logging.setLogRecordFactory(before)


def test_an_unsupported_store_url_is_refused_without_its_password() -> None:
    with pytest.raises(ValueError, match="unsupported store URL") as caught:
        open_store("etcd://root:hunter2@h:2379")
    assert "hunter2" not in str(caught.value)
