"""ops/bench/matrix.py against the real RabbitMQ and Redis, at a tiny scale, for one row:
it runs ``ksched bench`` in services mode, and the Markdown table it writes shows the
run's figures next to upstream's floor."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SCRIPT = Path(__file__).resolve().parents[2] / "ops" / "bench" / "matrix.py"


async def test_the_script_writes_the_row_of_a_real_run(tmp_path: Path) -> None:
    out = tmp_path / "matrix.md"
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), "--scale", "0.004", "--only", "SchedulingBasic",
        "--out", str(out),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(240):
        _, err = await process.communicate()
    assert process.returncode == 0, err.decode()[-2000:]
    header, _rule, row = [line for line in out.read_text().splitlines() if line.startswith("|")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    shown = dict(zip(columns, cells, strict=True))
    assert (shown["workload"], shown["nodes"], shown["pods"]) == ("SchedulingBasic", "20", "40")
    assert shown["upstream floor"] == "680" and shown["above floor"] in ("yes", "no")
    assert float(shown["pods/s"].replace(",", "")) > 0
    assert float(shown["messages/pod"]) >= 2  # at least the pod's event and its Binding
    assert "Passthrough" in shown["notes"] and shown["revision"] != "-"
    assert float(shown["cycle CPU ms/pod"]) > 0 and float(shown["CPU ms/pod"]) > 0
    assert float(shown["CPU/cycle"]) >= 1  # the whole pipeline, the cycle included
    assert float(shown["machine cycle pods/s"].replace(",", "")) > 0  # the calibration
    busiest = max(float(shown["informer/cycle"]), float(shown["queue/cycle"]))
    # (40 pods: the informer's and the queue's few 10 ms ticks may be all idle.)
    ceiling = shown["projected ceiling pods/s"]
    assert (ceiling == "-") == (busiest == 0), shown
