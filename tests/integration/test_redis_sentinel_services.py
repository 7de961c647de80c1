"""The four services as processes on a Redis behind Sentinel (a master, one replica and
three Sentinels of this test's own) while Redis fails over twice mid-run: once by
``SENTINEL FAILOVER``, once by killing the master outright. Every pod is bound exactly
once, no node is overcommitted, store and log agree, and the informer ended the epoch
of the store whose identity changed."""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections import Counter
from pathlib import Path

import aio_pika
import pytest

from services.common.store.redis import RedisStore
from services.common.store.sentinel import FailoverOptions
from tests.integration.harness import (
    AMQP_URL,
    Client,
    Processes,
    assert_bound_exactly_once,
    assert_store_within_allocatable,
    delete_namespace,
    node,
    pod,
)
from tests.integration.sentinel_support import redis_sentinel

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

NODES = 10
PODS = 100
"""10 nodes of 1 cpu and 100 pods of 100m: the pods fill every node exactly, so a
reservation lost in a failover and given again would overcommit one."""


async def test_every_pod_is_bound_once_through_two_redis_failovers(tmp_path: Path) -> None:
    with redis_sentinel(tmp_path / "redis") as handle:
        namespace = f"sent{uuid.uuid4().hex[:8]}"
        processes = Processes(namespace, tmp_path, redis_url=handle.url)
        connection = await aio_pika.connect_robust(AMQP_URL)
        store = RedisStore(handle.url, namespace=namespace, failover=FailoverOptions())
        client = Client(connection, namespace)
        try:
            for name in ("informer", "queue", "scheduler", "binder"):
                await processes.start(name)
            await client.open()
            for i in range(NODES):
                await client.publish("node", node(f"node-{i:02}", cpu="1"))
            for i in range(PODS):
                if i == PODS // 3:
                    await client.wait_for(lambda: len(client.bindings()) >= 20)
                    await asyncio.to_thread(handle.failover)
                if i == 2 * PODS // 3:
                    await client.wait_for(lambda: len(client.bindings()) >= 50)
                    master = handle.master_port
                    handle.signal(master, signal.SIGKILL)
                    await asyncio.to_thread(handle.restart, master)
                await client.publish("pod", pod(f"p-{i:03}", cpu="100m"))

            await client.wait_for(lambda: len(client.recorded) >= PODS, within=120)
            await assert_bound_exactly_once(client, store, PODS)
            per_node = Counter(targets[0] for targets in client.bindings().values())
            assert max(per_node.values()) <= 10, per_node
            await assert_store_within_allocatable(store)
            await processes.logged("informer", "changed identity", within=30)
        finally:
            try:
                await processes.stop_all()
            finally:
                await delete_namespace(connection, namespace)
                await connection.close()
                await store.close()
