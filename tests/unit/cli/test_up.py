"""``ksched up`` as a process: a service that keeps crashing is restarted with a growing
delay; one that exits 2 (bad input, which a restart cannot fix) stops them all with exit
2; a bad configuration is refused before anything starts; SIGTERM stops every service
within the bound (exit 0), SIGINT too (exit 130)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

from tests.unit.cli.process_support import (
    MEMORY,
    STOP_WITHIN,
    alive,
    finish,
    read_until,
    running_with,
    spawn,
    started,
    stop,
)

RESTART = re.compile(
    r"(\w+) (?:exited with code (-?\d+)|was killed by (\w+)); restarting in (\S+) s"
)


async def test_up_restarts_a_crashing_service_with_backoff_and_stops_all_on_sigterm(
    tmp_path: Path,
) -> None:
    up = await spawn("up", "--metrics-port", "0", *MEMORY, "--event-log", str(tmp_path / "e"))
    assert up.stderr is not None
    pids: dict[int, str] = {}
    restarts: list[tuple[str, str]] = []
    lines: list[str] = []
    try:
        async with asyncio.timeout(90):
            while len(restarts) < 3:
                line = (await up.stderr.readline()).decode()
                assert line, "ksched up ended:\n" + "".join(lines)
                lines.append(line)
                for pid, name in started(line).items():
                    pids[pid] = name
                    if name == "informer":  # it crashes (as kill -9 would) at once
                        os.kill(pid, signal.SIGKILL)
                if restart := RESTART.search(line):
                    restarts.append((restart[1], restart[3] or restart[2], restart[4]))
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            code = await finish(up, lines)
        finally:
            await stop(up)
    assert restarts == [
        ("informer", "SIGKILL", "0.5"),
        ("informer", "SIGKILL", "1"),
        ("informer", "SIGKILL", "2"),
    ]
    assert code == 0
    assert sorted(pids.values()).count("informer") == 3  # the 4th start was 2 s away
    assert {"queue", "scheduler", "binder"} <= set(pids.values())
    assert alive(pids) == [], "outlived ksched up"  # every child was stopped and reaped


async def test_up_stops_every_service_and_exits_2_when_one_exits_2(tmp_path: Path) -> None:
    """The informer cannot create its log under a file: exit 2, and so would every
    restart. `up` once restarted it forever; now it stops the others and exits 2."""
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    log = str(not_a_directory / "events.jsonl")
    up = await spawn("up", "--metrics-port", "0", *MEMORY, "--event-log", log)
    lines: list[str] = []
    try:
        await read_until(up, "informer exited with code 2", lines)
        code = await finish(up, lines)
    finally:
        await stop(up)
    text = "".join(lines)
    assert code == 2, text
    assert f"ksched run informer: cannot open {log}: Not a directory" in text
    assert "restarting" not in text and "Traceback" not in text
    assert {"informer", "queue", "scheduler", "binder"} <= set(started(text).values())
    assert alive(started(text)) == [], text


async def test_up_with_a_bad_config_exits_2_having_started_nothing(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: s, plugins: {filter: {enabled: [{name: NoSuchPlugin}]}}}]\n"
    )
    argv = ["up", "--config", str(config), *MEMORY, "--event-log", str(tmp_path / "e.jsonl")]
    up = await spawn(*argv)
    lines: list[str] = []
    try:
        code = await finish(up, lines)  # within STOP_WITHIN (10 s)
    finally:
        await stop(up)
    err = "".join(lines)
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"ksched: {config}:3: ") and "NoSuchPlugin" in err, err
    assert running_with(str(tmp_path)) == []
    assert not (tmp_path / "e.jsonl").exists()


async def test_up_stops_every_service_on_sigint_and_exits_130(tmp_path: Path) -> None:
    up = await spawn("up", "--metrics-port", "0", *MEMORY, "--event-log", str(tmp_path / "e"))
    lines: list[str] = []
    try:
        await read_until(up, "started binder", lines)
        up.send_signal(signal.SIGINT)
        code = await finish(up, lines)
    finally:
        await stop(up)
    text = "".join(lines)
    assert code == 130, text
    assert "SIGINT: stopping every service" in text
    assert alive(started(text)) == [], text


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
