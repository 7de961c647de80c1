"""``ksched bench --mode services`` stopped by SIGTERM mid-run, against the real RabbitMQ
and Redis: it stops the service processes it started, removes its namespace from both,
and ends with exit 143 and one line. Before, the default action ended the command at
once and left four services running and the namespace behind."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import aio_pika
import pytest
import redis.asyncio as aioredis

from contracts import topology
from tests.integration.harness import AMQP_URL, REDIS_URL

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

NAMESPACE = re.compile(r"ksched bench: services under namespace (bench[0-9a-f]+)")


def service_processes() -> dict[int, tuple[int, str]]:
    """Every ``ksched run`` process: pid → (parent pid, command line)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if "services.cli.main run" in cmdline:
            found[int(entry.name)] = (parent, cmdline)
    return found


def processes_naming(namespace: str) -> list[int]:
    """The pids of the services running under ``namespace``."""
    return [pid for pid, (_, cmd) in service_processes().items() if f" {namespace} " in cmd]


async def broker_has(namespace: str, queue: str) -> bool:
    connection = await aio_pika.connect(AMQP_URL)
    try:
        channel = await connection.channel()
        try:
            await channel.declare_queue(f"{namespace}.{queue}", passive=True)
        except aio_pika.exceptions.ChannelClosed:
            return False
        return True
    finally:
        await connection.close()


async def test_sigterm_stops_the_services_and_removes_the_namespace() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli.main", "bench", "SchedulingBasic",
        "--mode", "services", "--nodes", "20", "--init-pods", "0",
        "--pods", "100000", "--rate", "50",  # open loop: over half an hour unless stopped
        "--amqp-url", AMQP_URL, "--redis-url", REDIS_URL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ},
    )  # fmt: skip
    assert process.stderr is not None
    namespace = ""
    try:
        namespace = await run_then_stop(process, process.stderr)
    finally:
        await leave_nothing(process, namespace)


async def run_then_stop(process: asyncio.subprocess.Process, stderr: asyncio.StreamReader) -> str:
    """Wait until every service is up, send SIGTERM, check what it leaves; the run's
    namespace."""
    namespace = ""
    started: set[str] = set()
    lines: list[str] = []
    async with asyncio.timeout(90):
        while len(started) < 4:  # every service is up: the run is under way
            line = (await stderr.readline()).decode()
            assert line, "bench ended early:\n" + "".join(lines)
            lines.append(line)
            if found := NAMESPACE.search(line):
                namespace = found.group(1)
            if found := re.search(r"ksched INFO (informer|queue|scheduler|binder) started", line):
                started.add(found.group(1))
    assert namespace, "".join(lines)
    assert processes_naming(namespace)
    assert await broker_has(namespace, "ksched.informer.events")

    process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(60):
        _, err = await process.communicate()
    last = err.decode().strip().splitlines()[-1]
    assert process.returncode == 143, err.decode()[-2000:]
    assert last == (
        "ksched bench: stopped by SIGTERM before its report: its processes were stopped "
        f"and namespace {namespace} removed"
    )
    await assert_gone(namespace)
    return namespace


async def assert_gone(namespace: str) -> None:
    """No service, queue or Redis key of ``namespace`` is left."""
    assert processes_naming(namespace) == []
    assert not await broker_has(namespace, "ksched.informer.events")
    client = aioredis.from_url(REDIS_URL)
    try:
        assert [key async for key in client.scan_iter(match=f"{namespace}*")] == []
    finally:
        await client.aclose()


async def leave_nothing(process: asyncio.subprocess.Process, namespace: str) -> None:
    """Whatever failed above: no bench, no service and no namespace left behind (the
    namespace read from the bench's children when the bench never named it)."""
    children = {pid: cmd for pid, (parent, cmd) in service_processes().items()
                if parent == process.pid}  # fmt: skip
    for pid, cmd in children.items():  # first: they hold the bench's stderr open
        os.kill(pid, signal.SIGKILL)
        if found := re.search(r"--namespace (\S+)", cmd):
            namespace = namespace or found.group(1)
    if process.returncode is None:
        process.kill()
        async with asyncio.timeout(30):
            await process.wait()
    if not namespace:
        return
    client = aioredis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{namespace}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
    connection = await aio_pika.connect(AMQP_URL)
    try:
        channel = await connection.channel()
        for queue in topology.QUEUES:  # durable; the exclusive ones went with the bench
            await channel.queue_delete(f"{namespace}.{queue.name}")
        for exchange in topology.EXCHANGES:
            await channel.exchange_delete(f"{namespace}.{exchange.name}")
    finally:
        await connection.close()
