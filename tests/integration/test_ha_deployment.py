"""``ops/ha/up``, ``status`` and ``down`` as the README gives them: the cluster and the
Sentinels start, the supervisor brings back what dies (a RabbitMQ node rejoins, a Redis
master killed comes back as a replica once the Sentinels failed over), and ``down``
leaves no process and no work directory behind."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from ops.ha.deployment import PORTS, unavailable
from ops.ha.processes import free_block

ROOT = Path(__file__).resolve().parents[2]
UP_LIMIT = 300.0
REVIVE_LIMIT = 60.0


def ha(
    command: str, workdir: Path, *args: str, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "ops" / "ha" / command), "--workdir", str(workdir), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(") ", 1)[-1][0] != "Z"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(UP_LIMIT + REVIVE_LIMIT + 180)
def test_up_status_down_and_the_supervisor_brings_back_what_dies(tmp_path: Path) -> None:
    if why := unavailable():
        pytest.skip(f"the HA deployment cannot run here: {why}")
    workdir = tmp_path / "ha"
    base = free_block(PORTS, start=28000)
    up = ha("up", workdir, "--no-services", "--base-port", str(base), timeout=UP_LIMIT)
    state = json.loads((workdir / "state.json").read_text()) if workdir.exists() else {}
    try:
        assert up.returncode == 0, up.stderr + up.stdout
        assert f"127.0.0.1:{base}/,amqp://guest:guest@127.0.0.1:{base + 1}/" in up.stdout
        assert "redis+sentinel://127.0.0.1:" in up.stdout
        status = ha("status", workdir)
        assert status.returncode == 0, status.stdout + status.stderr
        for node in ("rabbit-ha1@localhost", "rabbit-ha2@localhost", "rabbit-ha3@localhost"):
            assert node in status.stdout.split("rabbitmq running nodes:")[1].splitlines()[0]
        assert f"redis master (sentinel {base + 32}): 127.0.0.1:{base + 30}" in status.stdout

        os.kill(state["processes"][f"redis-{base + 30}"], 9)
        os.kill(state["processes"]["rabbit-ha2@localhost"], 9)
        deadline = time.monotonic() + REVIVE_LIMIT
        while True:
            status = ha("status", workdir)
            if status.returncode == 0 and f"127.0.0.1:{base + 31}" in status.stdout:
                break  # everything runs again, the replica is the master
            assert time.monotonic() < deadline, status.stdout + status.stderr
            time.sleep(1)
        state = json.loads((workdir / "state.json").read_text())
    finally:
        down = ha("down", workdir)
    assert down.returncode == 0, down.stderr
    assert not workdir.exists()
    left = [name for name, pid in state.get("processes", {}).items() if alive(pid)]
    assert not left and not alive(state.get("supervisor", 0) or 0)
