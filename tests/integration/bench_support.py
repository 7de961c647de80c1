"""A ``ksched bench --mode services`` run seen from outside, for the tests that stop one
(directly or through ops/bench/matrix.py): its namespace and service processes, what it
must leave behind (nothing), and the clean-up when a test fails first."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import aio_pika
import redis.asyncio as aioredis

from contracts import topology
from tests.integration.harness import AMQP_URL, REDIS_URL

NAMESPACE = re.compile(r"ksched bench: services under namespace (bench[0-9a-f]+)")
STARTED = re.compile(r"ksched INFO (informer|queue|scheduler|binder) started")


async def under_way(stderr: asyncio.StreamReader, within: float, ended: str) -> str:
    """Read a run's ``stderr`` until its four services have started (at most ``within``
    s); the run's namespace. ``ended``: what the assertion says if the stream ends first."""
    namespace, started, lines = "", set[str](), list[str]()
    async with asyncio.timeout(within):
        while len(started) < 4:
            line = (await stderr.readline()).decode()
            assert line, ended + "\n" + "".join(lines)
            lines.append(line)
            if found := NAMESPACE.search(line):
                namespace = found.group(1)
            if found := STARTED.search(line):
                started.add(found.group(1))
    assert namespace, "".join(lines)
    return namespace


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
