"""``ksched bench --mode services`` stopped by SIGTERM mid-run, against the real RabbitMQ
and Redis: it stops the service processes it started, removes its namespace from both,
and ends with exit 143 and one line. Before, the default action ended the command at
once and left four services running and the namespace behind."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from tests.integration.bench_support import (
    assert_gone,
    broker_has,
    leave_nothing,
    processes_naming,
    under_way,
)
from tests.integration.harness import AMQP_URL, REDIS_URL

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


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
    # every service is up: the run is under way
    namespace = await under_way(stderr, 90, "bench ended early:")
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
