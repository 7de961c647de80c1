"""Ctrl-C ends every long-running command with 130, as ``ksched --help`` and the README
promise (SIGTERM stays a clean 0): a real SIGINT to the command as a process, once it
is running, on the in-process bus and store."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.unit.cli.process_support import MEMORY, finish, read_until, spawn, stop

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("argv", "running"),
    [
        (["watch", "--amqp-url", "memory://"], "watching ksched.decisions"),
        (["run", "binder", *MEMORY], "binder started"),
        (["run", "informer", *MEMORY, "--event-log", "memory://"], "informer started"),
    ],
    ids=["watch", "run binder", "run informer"],
)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_a_signal_ends_a_long_running_command_with_its_code(
    argv: list[str], running: str, sig: signal.Signals, tmp_path: Path
) -> None:
    child = await spawn(*argv, cwd=tmp_path)
    lines: list[str] = []
    try:
        await read_until(child, running, lines)
        child.send_signal(sig)
        code = await finish(child, lines)
    finally:
        await stop(child)
    assert code == (130 if sig == signal.SIGINT else 0), "".join(lines)
    assert "Traceback" not in "".join(lines)
