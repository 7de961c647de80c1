"""An event log the store was not built from (a relative ``--event-log`` given in another
directory), which once made the informer crash with a traceback (exit 70) and ``ksched
up`` restart it forever: ``up`` refuses it before starting anything, ``run informer``
with one line naming the log; both exit 2."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aio_pika
import pytest

from services.common.store.redis import RedisStore
from tests.contract.store_support import node_entry
from tests.integration.harness import AMQP_URL, REDIS_URL, delete_namespace
from tests.unit.cli.process_support import START_WITHIN, STOP_WITHIN, running_with, stop

pytestmark = pytest.mark.integration
MISMATCH = (
    "ends at seq 0 but the store has applied seq 1: it is not the log this store was built "
    "from; point --event-log (KSCHED_EVENT_LOG) at that log, or empty the store to rebuild "
    "it from this one"
)


@pytest.fixture
async def live_store() -> AsyncIterator[str]:
    """A namespace of its own whose store is live at seq 1 (one node), as an informer
    left it; removed from Redis and the broker afterwards."""
    namespace = f"upmis{uuid.uuid4().hex[:8]}"
    store = RedisStore(REDIS_URL, namespace=namespace)
    try:
        await store.restore([node_entry(1, "n1", cpu=1000, pods=5)], final=True)
        yield namespace
    finally:
        await store.flush_namespace()
        await store.close()
        connection = await aio_pika.connect_robust(AMQP_URL)
        await delete_namespace(connection, namespace)
        await connection.close()


async def ksched(namespace: str, cwd: Path, *argv: str) -> asyncio.subprocess.Process:
    """``ksched ARGV`` in ``cwd`` against the real servers, under ``namespace``."""
    return await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "services.cli.main", *argv),
        *("--amqp-url", AMQP_URL, "--redis-url", REDIS_URL, "--namespace", namespace),
        *("--event-log", "events.jsonl"),
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if not k.startswith("KSCHED_")},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


async def ended(child: asyncio.subprocess.Process, within: float) -> tuple[int, str]:
    assert child.stderr is not None
    try:
        async with asyncio.timeout(within):
            err = (await child.stderr.read()).decode()
            return await child.wait(), err
    finally:
        await stop(child)


async def test_up_with_a_log_the_store_was_not_built_from_exits_2_having_started_nothing(
    live_store: str, tmp_path: Path
) -> None:
    up = await ksched(live_store, tmp_path, "up", "--metrics-port", "0")
    code, err = await ended(up, STOP_WITHIN)
    assert code == 2, err
    assert err.splitlines() == [f"ksched up: event log {tmp_path / 'events.jsonl'} {MISMATCH}"]
    assert running_with(live_store) == []
    assert not (tmp_path / "events.jsonl").exists()


async def test_the_informer_names_a_log_the_store_was_not_built_from_and_exits_2(
    live_store: str, tmp_path: Path
) -> None:
    informer = await ksched(live_store, tmp_path, "run", "informer")
    code, err = await ended(informer, START_WITHIN)
    assert code == 2, err
    assert "Traceback" not in err and "a bug" not in err, err
    assert err.splitlines()[-1] == (
        f"ksched run informer: event log {tmp_path / 'events.jsonl'} {MISMATCH}"
    )
