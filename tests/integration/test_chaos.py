"""The chaos run in its short form (``ops/chaos --short``), as CI runs it: at least 2,000
pods through the four services on a RabbitMQ node and a redis-server of its own while a
service is killed with -9, RabbitMQ restarts, two services are killed at once and Redis
restarts empty. It must exit 0 with every invariant of its table ``ok``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.integration.chaos_support import run_chaos

LIMIT = 280.0
"""Seconds the short run may take, start-up and shutdown of its servers included."""


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(LIMIT + 20)
async def test_the_short_chaos_run_keeps_every_promise(tmp_path: Path) -> None:
    code, text = await run_chaos("--short", "--workdir", str(tmp_path), limit=LIMIT)
    summary = _from(text, "workload ")
    if code != 0:
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
