"""The bus on a cluster, on the real broker: durable queues declared quorum (exclusive
and temporary ones classic), and a list of brokers whose first is down."""

from __future__ import annotations

import asyncio

import aio_pika
import aiormq
import pytest

from contracts import topology as t
from services.common.bus import BusError, Message
from services.common.bus.rabbit import RabbitBus
from tests.contract.broker_proxy import broker_proxy
from tests.contract.bus_support import AMQP_URL, DEADLINE, Backend, Recorder, events, queue

pytestmark = pytest.mark.integration

DEAD_BROKER = "amqp://guest:guest@127.0.0.1:1/"
"""Nothing listens on port 1: a node that is down."""


async def queue_type(namespace: str, spec: t.QueueSpec) -> str:
    """The type of ``spec``'s queue on the broker: redeclaring it classic, with its other
    arguments, is refused (406 inequivalent arg 'x-queue-type') if it is a quorum queue."""
    dead = f"{namespace}.{t.DEAD.name}"
    arguments = {**t.queue_arguments(spec, dead_exchange=dead, quorum=False)}
    async with await aio_pika.connect(AMQP_URL) as connection:
        channel = await connection.channel()
        try:
            await channel.declare_queue(
                f"{namespace}.{spec.name}",
                durable=True,
                arguments={**arguments, "x-queue-type": "classic"},
            )
        except aiormq.exceptions.ChannelPreconditionFailed as refused:
            assert "x-queue-type" in str(refused)
            return "quorum"
        return "classic"


@pytest.mark.parametrize(("kind", "expected"), [("rabbit", "classic"), ("rabbit-quorum", "quorum")])
async def test_durable_queues_are_quorum_when_asked(kind: str, expected: str) -> None:
    backend = Backend(kind)
    try:
        bus = await backend.open()
        await bus.declare([t.DEAD_LETTERS, queue("q")])
        for spec in (t.DEAD_LETTERS, queue("q")):
            assert await queue_type(backend.namespace, spec) == expected
        feed = Recorder()  # exclusive and auto-delete: classic whatever the setting
        await bus.consume_raw(t.scheduler_cluster_queue("r1"), feed)
        await bus.publish([Message(t.CLUSTER.name, "", b"{}")])
        await feed.wait_for(lambda r: len(r.deliveries) == 1)
    finally:
        await backend.aclose()


async def test_a_dead_broker_first_in_the_list_is_skipped() -> None:
    backend = Backend("rabbit")
    try:
        bus = await backend.open(f"{DEAD_BROKER},{AMQP_URL}")
        got = Recorder()
        await bus.consume_raw(queue("a"), got)
        await bus.publish(events("via the second broker"))
        await got.wait_body("via the second broker")
    finally:
        await backend.aclose()


async def test_a_queue_of_another_type_is_refused_with_what_to_do() -> None:
    classic, quorum = Backend("rabbit"), Backend("rabbit-quorum")
    quorum.namespace = classic.namespace  # the same broker names: a deployment switched
    try:
        await (await classic.open()).declare([queue("q")])
        bus = await quorum.open()
        with pytest.raises(BusError, match="a queue's type cannot change in place"):
            await bus.declare([queue("q")])
    finally:
        await quorum.aclose()
        await classic.aclose()


async def test_when_its_node_dies_the_bus_reconnects_to_the_next() -> None:
    backend = Backend("rabbit")
    try:
        async with broker_proxy(AMQP_URL) as proxy:  # the first node, through a relay
            bus = await backend.open(f"{proxy.url},{AMQP_URL}")
            assert isinstance(bus, RabbitBus)
            got = Recorder()
            await bus.consume_raw(queue("a"), got)
            await bus.publish(events("before"))
            await got.wait_body("before")
        # The relay is gone: the first node died. The consumer is restored on the second.
        async with asyncio.timeout(DEADLINE):
            while True:
                try:
                    await bus.publish(events("after"))
                    break
                except BusError:  # reconnecting: publishes fail meanwhile
                    await asyncio.sleep(0)  # let the loss be noticed
                    await bus.wait_connected()
        await got.wait_body("after")
    finally:
        await backend.aclose()
