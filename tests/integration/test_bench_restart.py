"""ops/bench/restart.py against the real RabbitMQ and Redis at a tiny scale: it kills
the scheduler after a first round, starts another, and reports when the new one was
ready and had scheduled a second round (each round's pods all bound)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SCRIPT = Path(__file__).resolve().parents[2] / "ops" / "bench" / "restart.py"


async def run(*flags: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), *flags,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(240):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_killed_scheduler_is_replaced_and_serves_again() -> None:
    code, out, err = await run("--nodes", "20", "--pods", "100", "--probe", "30")
    assert code == 0, err[-2000:]
    report = json.loads(out.strip().splitlines()[-1])
    assert (report["nodes"], report["pods"], report["probe"]) == (20, 100, 30)
    ready, first = report["restart_ready_s"], report["restart_first_binding_s"]
    assert 0 < ready <= first <= report["restart_serving_s"]
    assert report["scheduler_rss_mb"] > 0 and report["restarted_rss_mb"] > 0
    assert set(report["peak_rss_mb"]) == {"informer", "queue", "scheduler", "binder"}


@pytest.mark.parametrize("flag", ["--nodes", "--probe"])
async def test_a_count_below_one_is_refused_naming_the_flag(flag: str) -> None:
    code, _, err = await run(flag, "0")
    assert code == 2
    assert f"{flag}: must be a positive number" in err
