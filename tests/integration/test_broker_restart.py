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
from services.common.bus.rabbit_connection import RECONNECT_LOG_EVERY
from services.common.store.redis import RedisStore
from tests.integration.harness import REDIS_URL, Processes, node, pod
from tests.integration.private_servers import RabbitNode

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(420)]

SERVICES = ("informer", "queue", "scheduler", "binder")
NODES = [node(f"node-{i}", cpu="8") for i in range(12)]
CPU_PER_POD = "100m"
PODS = 800
AHEAD = 100
"""The publisher stays at most this many pods ahead of the Bindings, so that it is
still publishing when the broker stops and when the connections are dropped."""
RESTART_AT, DROP_AT = 150, 450
"""Bindings seen when the broker is restarted, and when every connection is closed."""
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
        self.changed = asyncio.Condition()
        self.reconnects = 0
        self.retried = 0
        """Publishes sent again because the broker did not confirm them."""

    async def open(self) -> None:
        self.connection = await aio_pika.connect_robust(self.url, reconnect_interval=0.5)
        self.connection.reconnect_callbacks.add(self._on_reconnect)
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
        await self._notify()
        await message.ack()

    async def _on_cluster(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        for entry in json.loads(message.body)["events"]:
            if entry["kind"] == "pod" and entry.get("origin") == "binding":
                obj = entry["object"]
                name = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
                self.recorded[name] = obj["spec"]["nodeName"]
        await self._notify()
        await message.ack()

    async def _on_reconnect(self, *_: object) -> None:
        self.reconnects += 1
        await self._notify()

    async def _notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def publish(self, kind: str, obj: dict[str, Any]) -> None:
        body = json.dumps({"type": "ADDED", "object": obj}).encode()
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        await self.events.publish(message, routing_key=f"{kind}.added")

    async def publish_confirmed(self, kind: str, obj: dict[str, Any]) -> None:
        """Publish until the broker confirms: one it did not (the connection went away
        under it) is sent again once the connection is back, as a client must."""
        while True:
            reconnects = self.reconnects
            try:
                await self.publish(kind, obj)
                return
            except (aio_pika.exceptions.AMQPError, ConnectionError, RuntimeError):
                self.retried += 1
                await self.wait_for(lambda: self.reconnects > reconnects)  # noqa: B023

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(WITHIN), self.changed:
            await self.changed.wait_for(condition)

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
        names = [f"p-{i}" for i in range(PODS)]
        publisher = asyncio.create_task(publish_paced(client, names))

        await client.wait_for(lambda: len(client.bindings) >= RESTART_AT)
        await asyncio.to_thread(broker.stop)  # pods are in flight in every service
        await asyncio.to_thread(broker.start)
        for name in SERVICES:
            await processes.logged(name, "reconnected to the broker", within=WITHIN)
        await client.wait_for(lambda: len(client.bindings) >= DROP_AT)
        await asyncio.to_thread(broker.close_all_connections)

        async with asyncio.timeout(WITHIN):
            await publisher
        await client.wait_for(lambda: len(client.bindings) >= len(names))
        await wait_recorded_in_store(store, len(names))
        # the client may see its second reconnect after the last binding arrives
        await client.wait_for(lambda: client.reconnects >= 2)
        assert client.reconnects == 2
        for name in SERVICES:
            assert processes.children[name].returncode is None, processes.log(name)
            assert_attempts_logged_at_most_every_few_seconds(processes.log(name))
        await assert_bound_once_and_not_overcommitted(client, store, names)
    except TimeoutError:
        logs = "\n".join(f"--- {n}:\n{processes.log(n)[-6000:]}" for n in SERVICES)
        pods = (await store.objects("pod")).values()
        bound = sum(1 for body in pods if b'"nodeName"' in body)
        raise AssertionError(
            f"{len(client.bindings)} pods bound as the client saw it ({len(client.recorded)} "
            f"recorded on ksched.cluster, {bound} bound in the store, client reconnects "
            f"{client.reconnects}, publishes retried {client.retried}); the services said:"
            f"\n{logs}"
        ) from None
    finally:
        try:
            await processes.stop_all()
        finally:
            await client.close()
            await store.flush_namespace()
            await store.close()


async def wait_recorded_in_store(store: RedisStore, pods: int) -> None:
    """Until the store holds ``pods`` bound pods (the informer has recorded every
    Binding; bounded). Polled: the store has no change feed. (ksched.cluster is not
    enough: entries whose publish failed while the broker was down reach the services
    through their gap reload from the store, not on the feed.)"""
    async with asyncio.timeout(WITHIN):
        while True:
            stored = (await store.objects("pod")).values()
            if sum(1 for v in stored if json.loads(v)["spec"].get("nodeName")) >= pods:
                return
            await asyncio.sleep(0.2)


async def publish_paced(client: DurableClient, names: list[str]) -> None:
    for i, name in enumerate(names):
        await client.wait_for(lambda: len(client.bindings) >= i - AHEAD)  # noqa: B023
        await client.publish_confirmed("pod", pod(name, cpu=CPU_PER_POD))


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
        assert stored[name]["spec"]["nodeName"] == targets[0], name
        assert client.recorded.get(name, targets[0]) == targets[0], name
    per_node = Counter(targets[0] for targets in client.bindings.values())
    for name, count in per_node.items():
        assert count * resource_amount("cpu", CPU_PER_POD) <= resource_amount("cpu", "8"), name
    usage, allocatable = await store.node_usage(), await store.allocatable()
    for name, used in usage.items():
        for resource, amount in used.items():
            assert amount <= allocatable[name].get(resource, 0), (name, resource)
