"""The ``cluster`` fixture: four service processes under a namespace of the test's own."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aio_pika
import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import AMQP_URL, REDIS_URL, Client, Processes, delete_namespace


@pytest.fixture
def informer_env() -> dict[str, str]:
    """Variables added to the informer's environment (a module overrides the fixture)."""
    return {}


@pytest.fixture
async def cluster(
    tmp_path: Path, informer_env: dict[str, str]
) -> AsyncIterator[tuple[Processes, Client, RedisStore]]:
    namespace = f"e2e{uuid.uuid4().hex[:8]}"
    processes = Processes(namespace, tmp_path)
    connection = await aio_pika.connect_robust(AMQP_URL)
    store = RedisStore(REDIS_URL, namespace=namespace)
    client = Client(connection, namespace)
    try:
        for name in ("informer", "queue", "scheduler", "binder"):
            await processes.start(name, env=informer_env if name == "informer" else None)
        await client.open()
        yield processes, client, store
    finally:
        try:
            await processes.stop_all()  # fails the test if a service outlives SIGTERM
        finally:
            await delete_namespace(connection, namespace)
            await connection.close()
            await store.flush_namespace()
            await store.close()
