"""Which event log a services-mode bench gives its informer, and which streams it removes
afterwards: the HA shape is measured on a stream named in the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.services import event_log, log_streams

CASES: dict[str, tuple[str, str, list[str]]] = {
    "no log configured: a file in the run's directory": ("", "/run/events.jsonl", []),
    "a file log configured: still the run's own file": (
        "/var/lib/ksched/events.jsonl",
        "/run/events.jsonl",
        [],
    ),
    "the default stream": (
        "stream://",
        "stream://",
        ["ksched.eventlog", "ksched.eventlog.fences", "ksched.eventlog.snapshots"],
    ),
    "a named stream": (
        "stream://prod.log",
        "stream://prod.log",
        [
            "prod.log",
            "prod.log.fences",
            "prod.log.snapshots",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_bench_logs_to_a_configured_stream_else_its_own_file(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configured, expected, streams = CASES[case]
    monkeypatch.setenv("KSCHED_EVENT_LOG", configured)
    spec = event_log(Path("/run"))
    assert spec == expected
    assert log_streams(spec) == streams
