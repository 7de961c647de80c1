"""Running ``ops/chaos`` as the README gives it, for the chaos tests: on the test's
Python (its venv first on PATH), bounded, stopped with SIGINT (the run then stops every
process it started) when it overruns."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


async def run_chaos(*args: str, limit: float) -> tuple[int, str]:
    """``ops/chaos ARGS``: its exit code and output; the test fails past ``limit``."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "VIRTUAL_ENV": sys.prefix, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    child = await asyncio.create_subprocess_exec(
        str(ROOT / "ops" / "chaos"), *args, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        async with asyncio.timeout(limit):
            output, _ = await child.communicate()
    except TimeoutError:
        child.send_signal(signal.SIGINT)
        async with asyncio.timeout(60):
            output, _ = await child.communicate()
        said = output.decode(errors="replace")[-5000:]
        pytest.fail(f"ops/chaos {' '.join(args)} did not end within {limit:g} s:\n{said}")
    assert child.returncode is not None
    return child.returncode, output.decode(errors="replace")
