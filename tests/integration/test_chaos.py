"""The chaos run in its short form (``ops/chaos --short``), as CI runs it: at least 2,000
pods through the four services on a RabbitMQ node and a redis-server of its own while a
service is killed with -9, RabbitMQ restarts, two services are killed at once and Redis
restarts empty. It must exit 0 with every invariant of its table ``ok``."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 280.0
"""Seconds the short run may take, start-up and shutdown of its servers included."""


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(LIMIT + 20)
async def test_the_short_chaos_run_keeps_every_promise(tmp_path: Path) -> None:
    # ops/chaos as the README gives it, on this test's Python (its venv first on PATH).
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "VIRTUAL_ENV": sys.prefix, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    child = await asyncio.create_subprocess_exec(
        str(ROOT / "ops" / "chaos"), "--short", "--workdir", str(tmp_path),
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        async with asyncio.timeout(LIMIT):
            output, _ = await child.communicate()
    except TimeoutError:
        child.send_signal(signal.SIGINT)  # the run stops every process it started
        async with asyncio.timeout(60):
            output, _ = await child.communicate()
        pytest.fail(f"ops/chaos --short did not end within {LIMIT:g} s:\n{output.decode()[-5000:]}")
    text = output.decode(errors="replace")
    summary = _from(text, "workload ")
    if child.returncode != 0:
        timeline = _from(text, "faults:")
        stall = [tmp_path / "queues.txt", tmp_path / "queue-view.json"]
        records = "".join(f"\n{p.name}:\n{p.read_text()[:1500]}" for p in stall if p.exists())
        pytest.fail(f"ops/chaos --short failed:\n{timeline or text[-5000:]}{records}")
    assert "VIOLATION" not in summary
    for fault in ("broker x1", "double x1", "kill x1", "redis x1"):
        assert fault in summary, summary
    assert re.search(r"^pods lost \(never bound\) +0  ok$", summary, re.MULTILINE), summary


def _from(text: str, marker: str) -> str:
    """``text`` from the line starting with ``marker``; empty if there is none."""
    at = text.find("\n" + marker)
    return text[at + 1 :] if at >= 0 else ""
