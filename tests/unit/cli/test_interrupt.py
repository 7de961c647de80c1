"""Ctrl-C ends every long-running command with 130, as ``ksched --help`` and the README
promise (they once exited 0, as for SIGTERM): a real SIGINT to the command as a
process, once it is running, on the in-process bus and store. (``up``: test_up.py.)"""

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
async def test_ctrl_c_ends_a_long_running_command_with_130(
    argv: list[str], running: str, tmp_path: Path
) -> None:
    child = await spawn(*argv, cwd=tmp_path)
    lines: list[str] = []
    try:
        await read_until(child, running, lines)
        child.send_signal(signal.SIGINT)
        code = await finish(child, lines)
    finally:
        await stop(child)
    assert code == 130, "".join(lines)
    assert "Traceback" not in "".join(lines)
