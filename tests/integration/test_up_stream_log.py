"""``ksched up``'s check of the event log when it is a stream: a stream that does not
reach the seq the live store applied is refused before anything starts, one that does
passes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import aio_pika
import pytest

from services.cli.up import _check_event_log
from services.common.eventlog import LogMismatchError
from services.common.settings import Settings, from_env
from services.common.store.redis import RedisStore
from tests.contract.eventlog_support import events
from tests.contract.store_support import node_entry
from tests.integration.harness import AMQP_URL, REDIS_URL

pytestmark = pytest.mark.integration


async def _live(namespace: str) -> None:
    store = RedisStore(REDIS_URL, namespace=namespace)
    await store.restore([node_entry(1, "n1", cpu=1000, pods=5)], final=True)
    await store.close()


async def _cleanup(namespace: str) -> None:
    store = RedisStore(REDIS_URL, namespace=namespace)
    await store.flush_namespace()
    await store.close()
    async with await aio_pika.connect(AMQP_URL) as connection:
        channel = await connection.channel()
        for suffix in ("", ".fences", ".snapshots"):
            await channel.queue_delete(f"{namespace}.log{suffix}")


@pytest.fixture
def settings() -> Iterator[Settings]:
    """Settings of a namespace of its own whose store is live at seq 1."""
    namespace = f"upst{uuid.uuid4().hex[:8]}"
    asyncio.run(_live(namespace))
    env = {"KSCHED_AMQP_URL": AMQP_URL, "KSCHED_REDIS_URL": REDIS_URL}
    yield from_env(env, namespace=namespace, event_log="stream://log")
    asyncio.run(_cleanup(namespace))


def test_a_stream_behind_the_store_is_refused(settings: Settings) -> None:
    with pytest.raises(LogMismatchError, match="event log stream://log ends at seq 0"):
        _check_event_log(settings)


def test_a_stream_the_store_was_built_from_passes(settings: Settings) -> None:
    from services.cli.eventlogs import open_log

    async def append() -> None:
        log = open_log("stream://log", settings)
        await log.append(events(1, 1))
        await log.close()

    asyncio.run(append())
    _check_event_log(settings)
