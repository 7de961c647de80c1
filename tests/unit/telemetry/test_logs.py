"""--log-format json: one object per line, with the trace and span inside a span."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from services.cli.main import _settings_argv, parser
from services.common.logs import JsonFormatter


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("ksched-binder"))
    logger = logging.getLogger("ksched.test.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def records(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_record_outside_a_span(logged: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = logged
    logger.warning("not binding %d pods: %s", 2, "lost")
    (record,) = records(stream)
    assert set(record) == {"time", "level", "logger", "message", "service"}
    assert record["level"] == "WARNING"
    assert record["logger"] == "ksched.test.logs"
    assert record["message"] == "not binding 2 pods: lost"
    assert record["service"] == "ksched-binder"
    when = datetime.fromisoformat(str(record["time"]))  # RFC 3339, with its offset
    assert when.utcoffset() is not None and str(record["time"]).endswith("+00:00")


def test_inside_a_span_the_trace_and_span_ids(
    logged: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = logged
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("binding_cycle") as span:
        logger.info("bound", extra={"pod": "team-a/web-1"})
    logger.info("after")
    inside, after = records(stream)
    context = span.get_span_context()
    assert inside["trace_id"] == trace.format_trace_id(context.trace_id)
    assert inside["span_id"] == trace.format_span_id(context.span_id)
    assert len(str(inside["trace_id"])) == 32 and len(str(inside["span_id"])) == 16
    assert inside["pod"] == "team-a/web-1"
    assert "trace_id" not in after and "span_id" not in after and "pod" not in after


def test_an_exception_is_one_line_of_json(logged: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = logged
    try:
        raise RuntimeError("redis://:secret@cache:6379 went away")
    except RuntimeError:
        logger.exception("apply failed")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    (record,) = records(stream)
    assert "RuntimeError" in str(record["exception"])


def test_up_hands_the_format_to_every_service() -> None:
    args = parser().parse_args(["up", "--log-format", "json"])
    assert _settings_argv(args)[-2:] == ["--log-format", "json"]
    assert "--log-format" not in _settings_argv(parser().parse_args(["up"]))


@pytest.mark.parametrize("command", [["run", "queue"], ["up"], ["simulate", "x.yaml"]])
def test_every_command_that_runs_services_takes_it(command: list[str]) -> None:
    assert parser().parse_args([*command, "--log-format", "json"]).log_format == "json"
    assert parser().parse_args(command).log_format == "text"


def test_simulate_logs_json_lines() -> None:
    """A pod without requests that fit: simulate warns nothing, so -v makes it speak."""
    cluster = "\n---\n".join(
        [
            "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', pods: '5'}}",
            "kind: Pod\nmetadata: {name: p, namespace: t}\nspec: {containers: [{name: c}]}",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "-v", "simulate", "-", "--log-format", "json"],
        input=cluster,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines, "no log record at -v"
    for line in lines:
        record = json.loads(line)
        assert record["service"] == "ksched-simulate"
        assert {"time", "level", "logger", "message"} <= set(record)
