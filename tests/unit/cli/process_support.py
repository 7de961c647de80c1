"""``ksched`` as a child process: start it, read its stderr until a line, find the
processes it left behind. Every wait is bounded."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

KSCHED = (sys.executable, "-m", "services.cli.main")
MEMORY = ("--amqp-url", "memory://", "--redis-url", "memory://")
"""The in-process bus and store: a service that needs no broker and no Redis."""
START_WITHIN = 90.0
"""Seconds a child has to say it started (four Python processes importing NumPy on a
busy 2-core machine take tens of seconds)."""
STOP_WITHIN = 10.0
"""Seconds a command has to end after a signal or a refusal."""
STARTED = re.compile(r"started (\w+) \(pid (\d+)\)")


async def spawn(*argv: str, cwd: Path | None = None) -> asyncio.subprocess.Process:
    """``ksched ARGV`` with stderr piped (stdout discarded)."""
    return await asyncio.create_subprocess_exec(
        *KSCHED,
        *argv,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
    )


async def read_until(child: asyncio.subprocess.Process, text: str, lines: list[str]) -> None:
    """Read ``child``'s stderr into ``lines`` until a line contains ``text``; fails if
    it ends first or takes longer than START_WITHIN."""
    assert child.stderr is not None
    async with asyncio.timeout(START_WITHIN):
        while not any(text in line for line in lines):
            line = (await child.stderr.readline()).decode()
            assert line, f"ended before {text!r}:\n" + "".join(lines)
            lines.append(line)


async def finish(child: asyncio.subprocess.Process, lines: list[str]) -> int:
    """The rest of ``child``'s stderr into ``lines`` and its exit code, within STOP_WITHIN."""
    assert child.stderr is not None
    async with asyncio.timeout(STOP_WITHIN):
        lines.append((await child.stderr.read()).decode())
        return await child.wait()


async def stop(child: asyncio.subprocess.Process) -> None:
    """End ``child`` if it still runs: SIGTERM (``up`` then stops its own children),
    SIGKILL after STOP_WITHIN."""
    if child.returncode is not None:
        return
    child.terminate()
    try:
        async with asyncio.timeout(STOP_WITHIN):
            await child.wait()
    except TimeoutError:
        child.kill()
        await child.wait()


def started(text: str) -> dict[int, str]:
    """pid → service of every ``started NAME (pid N)`` line of ``ksched up``."""
    return {int(m[2]): m[1] for m in STARTED.finditer(text)}


def alive(pids: dict[int, str]) -> list[str]:
    """The services of ``pids`` still running (a reaped child no longer exists)."""
    left = []
    for pid, name in pids.items():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        left.append(f"{name} (pid {pid})")
    return left


def running_with(token: str) -> list[int]:
    """Pids of the processes whose command line contains ``token`` (a test's own tmp
    path): what a command left running, whether or not it said it started it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found
