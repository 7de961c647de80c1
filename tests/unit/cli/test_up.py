"""``ksched up`` as a process: a service that keeps crashing is restarted with a growing
delay, and SIGTERM to ``up`` stops every service within the bound."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

STOP_WITHIN = 10.0
RESTART = re.compile(r"(\w+) exited with code (\d+); restarting in (\S+) s")


async def test_up_restarts_a_crashing_service_with_backoff_and_stops_all_on_sigterm(
    tmp_path: Path,
) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")  # the informer cannot create its log under it: exit 2
    up = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "services.cli.main", "up", "--metrics-port", "0"),
        *("--amqp-url", "memory://"),
        *("--redis-url", "memory://", "--event-log", str(not_a_directory / "events.jsonl")),
        stderr=asyncio.subprocess.PIPE,
    )
    assert up.stderr is not None
    pids: dict[int, str] = {}
    restarts: list[tuple[str, str, str]] = []
    lines: list[str] = []
    try:
        async with asyncio.timeout(60):
            while len(restarts) < 3:
                line = (await up.stderr.readline()).decode()
                assert line, "ksched up ended:\n" + "".join(lines)
                lines.append(line)
                if started := re.search(r"started (\w+) \(pid (\d+)\)", line):
                    pids[int(started[2])] = started[1]
                if restart := RESTART.search(line):
                    restarts.append((restart[1], restart[2], restart[3]))
    finally:
        up.send_signal(signal.SIGTERM)
    assert restarts == [("informer", "2", "0.5"), ("informer", "2", "1"), ("informer", "2", "2")]
    async with asyncio.timeout(STOP_WITHIN):
        assert await up.wait() == 0
    assert sorted(pids.values()).count("informer") == 3  # the 4th start was 2 s away
    assert {"queue", "scheduler", "binder"} <= set(pids.values())
    for pid, name in pids.items():  # every child was stopped and reaped by `up`
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"{name} (pid {pid}) outlived ksched up")


async def test_up_with_a_policy_runs_the_descheduler_and_lets_a_finished_cycle_end(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "- name: p\n  pluginConfig:\n  - name: PodLifeTime\n"
        "    args: {maxPodLifeTimeSeconds: 60}\n"
        "  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n"
    )
    up = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "services.cli.main", "up", "--metrics-port", "0"),
        *("--amqp-url", "memory://"),
        *("--redis-url", "memory://", "--event-log", str(tmp_path / "events.jsonl")),
        *("--policy", str(policy), "--interval", "0s"),
        stderr=asyncio.subprocess.PIPE,
    )
    assert up.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(60):
            while not any("descheduler finished its cycle" in line for line in lines):
                line = (await up.stderr.readline()).decode()
                assert line, "ksched up ended:\n" + "".join(lines)
                lines.append(line)
    finally:
        up.send_signal(signal.SIGTERM)
    async with asyncio.timeout(STOP_WITHIN):
        rest = (await up.stderr.read()).decode()
        assert await up.wait() == 0
    text = "".join(lines) + rest
    assert re.search(r"started descheduler \(pid \d+\)", text)
    assert "Skipping descheduling cycle: requires >=2 nodes" in text or "cycle:" in text, text
    assert not RESTART.search(text), text
