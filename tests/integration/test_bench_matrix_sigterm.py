"""ops/bench/matrix.py stopped by SIGTERM while a ``ksched bench`` run is under way,
against the real RabbitMQ and Redis: the run gets SIGTERM in turn (it stops its
services and removes its namespace), the table is still written, with that row
stopped and the next one not run, and the script exits 143."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from bench.matrix import STOPPED
from tests.integration.bench_support import (
    assert_gone,
    leave_nothing,
    processes_naming,
    under_way,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SCRIPT = Path(__file__).resolve().parents[2] / "ops" / "bench" / "matrix.py"


def children_of(parent: int) -> list[int]:
    """The pids whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent
            ):
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


async def test_sigterm_stops_the_run_and_still_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "matrix.md"
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), "--scale", "0.2",
        "--only", "SchedulingBasic,TopologySpreading", "--out", str(out),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    namespace = ""
    try:
        # the run's services are up: it is under way
        namespace = await under_way(process.stderr, 120, "the matrix ended before its first run:")
        assert processes_naming(namespace)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(90):
            _, err = await process.communicate()
        assert process.returncode == 143, err.decode()[-2000:]
        assert f"matrix: SIGTERM: {STOPPED}" in err.decode()
        # The run was stopped, not left to finish: ksched bench said so (on SIGTERM).
        assert f"namespace {namespace} removed" in err.decode(), err.decode()[-2000:]
        rows = [line for line in out.read_text().splitlines() if line.startswith("| ")]
        assert rows[1].startswith("| SchedulingBasic |") and f"| {STOPPED} |" in rows[1]
        assert rows[2].startswith("| TopologySpreading |")
        assert f"| not run: {STOPPED} |" in rows[2]
        await assert_gone(namespace)
    finally:
        for pid in [*children_of(process.pid), *(processes_naming(namespace) if namespace else [])]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # only when the script failed to stop them
        await leave_nothing(process, namespace)
