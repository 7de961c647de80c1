"""``ksched up`` against a store built from another event log (a relative
``--event-log`` given in another directory, which once made the informer crash with a
traceback and ``up`` restart it forever): one line naming the log, exit 2, within 10 s,
nothing started."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import aio_pika
import pytest

from services.common.store.redis import RedisStore
from tests.contract.store_support import node_entry
from tests.integration.harness import AMQP_URL, REDIS_URL, delete_namespace
from tests.unit.cli.process_support import STOP_WITHIN, running_with, stop

pytestmark = pytest.mark.integration


async def test_up_with_a_log_the_store_was_not_built_from_exits_2_having_started_nothing(
    tmp_path: Path,
) -> None:
    namespace = f"upmis{uuid.uuid4().hex[:8]}"
    store = RedisStore(REDIS_URL, namespace=namespace)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    up: asyncio.subprocess.Process | None = None
    try:
        await store.restore([node_entry(1, "n1", cpu=1000, pods=5)], final=True)  # live, seq 1
        up = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "services.cli.main", "up", "--metrics-port", "0"),
            *("--amqp-url", AMQP_URL, "--redis-url", REDIS_URL, "--namespace", namespace),
            *("--event-log", "events.jsonl"),
            cwd=elsewhere,
            env={k: v for k, v in os.environ.items() if not k.startswith("KSCHED_")},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        assert up.stderr is not None
        async with asyncio.timeout(STOP_WITHIN):
            err = (await up.stderr.read()).decode()
            code = await up.wait()
        assert code == 2, err
        assert err.splitlines() == [
            f"ksched up: event log {elsewhere / 'events.jsonl'} ends at seq 0 but the store "
            "has applied seq 1: it is not the log this store was built from; point "
            "--event-log (KSCHED_EVENT_LOG) at that log, or empty the store to rebuild it "
            "from this one"
        ]
        assert running_with(namespace) == []
        assert not (elsewhere / "events.jsonl").exists()
    finally:
        if up is not None:
            await stop(up)
        await store.flush_namespace()
        await store.close()
        connection = await aio_pika.connect_robust(AMQP_URL)
        await delete_namespace(connection, namespace)
        await connection.close()
