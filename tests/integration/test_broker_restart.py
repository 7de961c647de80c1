"""The broker restarts, and later drops every connection, under the four services while
pods are in flight: every service reconnects by itself, re-declares its topology and
resumes; every pod is bound, each to one node, and no node is overcommitted.

The broker is a private RabbitMQ node (tests.integration.private_servers), never the
shared one other tests use. The client keeps its decisions in a durable queue and
publishes with confirms, as a user who must not miss a Binding would.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import aio_pika
import pytest

from contracts.quantity import resource_amount
from services.common.bus.rabbit import RECONNECT_LOG_EVERY
from services.common.store.redis import RedisStore
from tests.integration.harness import REDIS_URL, Processes, node, pod
from tests.integration.private_servers import RabbitNode

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(420)]

SERVICES = ("informer", "queue", "scheduler", "binder")
NODES = [node(f"node-{i}", cpu="8") for i in range(6)]
CPU_PER_POD = "100m"
WAVES = (150, 150, 100)
"""Pods published before the restart, after it, and after the connections are dropped."""
WITHIN = 180.0


class DurableClient:
    """Publishes watch events with confirms; reads Bindings from a durable queue of its
    own (acknowledged once recorded), so none is lost when the broker restarts."""

    def __init__(self, url: str, namespace: str) -> None:
        self.url = url
        self.prefix = f"{namespace}."
        self.bindings: dict[str, list[str]] = defaultdict(list)
        self.recorded: dict[str, str] = {}
        """pod → node for every Binding the informer recorded in the log (ksched.cluster)."""
        self.arrived = asyncio.Event()
        self.up = asyncio.Event()

    async def open(self) -> None:
        self.connection = await aio_pika.connect_robust(self.url, reconnect_interval=0.5)
        self.connection.reconnect_callbacks.add(lambda *_: self.up.set())
        self.connection.close_callbacks.add(lambda *_: self.up.clear())
        self.up.set()
        channel = await self.connection.channel(publisher_confirms=True)
        self.events = await channel.declare_exchange(
            self.prefix + "ksched.events", aio_pika.ExchangeType.TOPIC, durable=True
        )
        decisions = await channel.declare_exchange(
            self.prefix + "ksched.decisions", aio_pika.ExchangeType.TOPIC, durable=True
        )
        inbox = await channel.declare_queue(self.prefix + "test.bindings", durable=True)
        await inbox.bind(decisions, "binding.#")
        await inbox.consume(self._on_binding)
        cluster = await channel.declare_exchange(
            self.prefix + "ksched.cluster", aio_pika.ExchangeType.FANOUT, durable=True
        )
        feed = await channel.declare_queue(self.prefix + "test.cluster", durable=True)
        await feed.bind(cluster, "")
        await feed.consume(self._on_cluster)

    async def _on_binding(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        body = json.loads(message.body)
        meta = body["metadata"]
        self.bindings[f"{meta['namespace']}/{meta['name']}"].append(body["target"]["name"])
        self.arrived.set()
        await message.ack()

    async def _on_cluster(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        for entry in json.loads(message.body)["events"]:
            if entry["kind"] == "pod" and entry.get("origin") == "binding":
                obj = entry["object"]
                name = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
                self.recorded[name] = obj["spec"]["nodeName"]
        self.arrived.set()
        await message.ack()

    async def publish(self, kind: str, obj: dict[str, Any]) -> None:
        body = json.dumps({"type": "ADDED", "object": obj}).encode()
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        await self.events.publish(message, routing_key=f"{kind}.added")

    async def reconnected(self) -> None:
        async with asyncio.timeout(WITHIN):
            await self.up.wait()

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(WITHIN):
            while not condition():
                self.arrived.clear()
                await self.arrived.wait()

    async def close(self) -> None:
        await self.connection.close()


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[RabbitNode]:
    rabbit = RabbitNode(tmp_path / "rabbitmq")
    await asyncio.to_thread(rabbit.start)
    try:
        yield rabbit
    finally:
        await asyncio.to_thread(rabbit.stop)


async def test_a_broker_restart_and_dropped_connections_lose_no_pod(
    broker: RabbitNode, tmp_path: Path
) -> None:
    namespace = f"br{uuid.uuid4().hex[:8]}"
    processes = Processes(namespace, tmp_path, amqp_url=broker.url)
    store = RedisStore(REDIS_URL, namespace=namespace)
    client = DurableClient(broker.url, namespace)
    try:
        for name in SERVICES:
            await processes.start(name)
        await client.open()
        for n in NODES:
            await client.publish("node", n)
        names = [f"p-{i}" for i in range(sum(WAVES))]
        first, second, _ = WAVES

        for name in names[:first]:
            await client.publish("pod", pod(name, cpu=CPU_PER_POD))
        await client.wait_for(lambda: len(client.bindings) >= 20)
        await asyncio.to_thread(broker.stop)  # pods are in flight in every service
        await asyncio.to_thread(broker.start)
        await client.reconnected()
        for name in names[first : first + second]:
            await client.publish("pod", pod(name, cpu=CPU_PER_POD))
        for name in SERVICES:
            await processes.logged(name, "reconnected to the broker", within=WITHIN)

        await client.wait_for(lambda: len(client.bindings) >= first + 20)
        await asyncio.to_thread(broker.close_all_connections)
        await client.reconnected()
        for name in names[first + second :]:
            await client.publish("pod", pod(name, cpu=CPU_PER_POD))

        await client.wait_for(lambda: len(client.recorded) >= len(names))
        for name in SERVICES:
            assert processes.children[name].returncode is None, processes.log(name)
            assert_attempts_logged_at_most_every_few_seconds(processes.log(name))
        await assert_bound_once_and_not_overcommitted(client, store, names)
    except TimeoutError:
        logs = "\n".join(f"--- {n}:\n{processes.log(n)[-6000:]}" for n in SERVICES)
        raise AssertionError(
            f"{len(client.bindings)} pods bound; the services said:\n{logs}"
        ) from None
    finally:
        try:
            await processes.stop_all()
        finally:
            await client.close()
            await store.flush_namespace()
            await store.close()


def assert_attempts_logged_at_most_every_few_seconds(log: str) -> None:
    """aio-pika's lines about reconnection attempts are RECONNECT_LOG_EVERY apart."""
    stamps = [
        datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
        for line in log.splitlines()
        if " aio_pika.robust_connection " in line
    ]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(stamps)]
    assert all(gap >= RECONNECT_LOG_EVERY - 0.01 for gap in gaps), (gaps, log)


async def assert_bound_once_and_not_overcommitted(
    client: DurableClient, store: RedisStore, names: list[str]
) -> None:
    assert sorted(client.bindings) == sorted(f"e2e/{name}" for name in names)
    for name, targets in client.bindings.items():
        assert len(set(targets)) == 1, f"{name} bound to {targets}"
    stored = {k: json.loads(v) for k, v in (await store.objects("pod")).items()}
    for name, targets in client.bindings.items():
        assert stored[name]["spec"]["nodeName"] == targets[0] == client.recorded[name], name
    per_node = Counter(targets[0] for targets in client.bindings.values())
    for name, count in per_node.items():
        assert count * resource_amount("cpu", CPU_PER_POD) <= resource_amount("cpu", "8"), name
    usage, allocatable = await store.node_usage(), await store.allocatable()
    for name, used in usage.items():
        for resource, amount in used.items():
            assert amount <= allocatable[name].get(resource, 0), (name, resource)
