"""The exit code of a failure that reached the CLI: a server that went away is
unreachability (3, a restart may help), a file that cannot be opened is bad input (2)."""

from __future__ import annotations

import pytest

from services.cli.errors import BAD_INPUT, UNREACHABLE, explain

CASES: dict[str, tuple[BaseException, int, str]] = {
    "a stream's node without a replica yet": (
        ConnectionError("event log stream://ksched.eventlog: PRECONDITION_FAILED"),
        UNREACHABLE,
        "PRECONDITION_FAILED",
    ),
    "a connection reset": (ConnectionResetError(104, "Connection reset by peer"), UNREACHABLE, ""),
    "a timed-out server": (TimeoutError("no answer"), UNREACHABLE, "no answer"),
    "a file that cannot be opened": (
        FileNotFoundError(2, "No such file or directory", "/nope.yaml"),
        BAD_INPUT,
        "cannot open /nope.yaml",
    ),
    "a directory that refuses": (PermissionError(13, "Permission denied"), BAD_INPUT, "denied"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_exit_code_says_whether_a_restart_may_help(case: str) -> None:
    error, code, said = CASES[case]
    failure = explain(error, command="run informer", amqp_url="amqp://x", redis_url="redis://y")
    assert failure.code == code
    assert said in failure.line and failure.line.startswith("ksched run informer: ")
    assert "\n" not in failure.line
