"""Traces across real processes: the four services on RabbitMQ and Redis with
``OTEL_TRACES_EXPORTER=console`` (one line per span on each one's stderr) and
``--log-format json``. One pod published with a ``traceparent`` comes out as one
trace: the user's span → the informer's ``process`` (CONSUMER) and ``ingest`` → the
queue's ``scheduling_queue.pop`` → the scheduler's ``scheduling_cycle`` → the binder's
``binding_cycle``, with the messaging and database attributes on the bus and store
spans, and the Binding's headers still carry it. Every broker hop of the pod is in its
trace (publish and process spans as children), and idle services start no trace: a
root span always has a message or a pod behind it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aio_pika
import pytest
import redis.asyncio as aioredis

from services.common.store.redis import RedisStore
from tests.integration.harness import (
    AMQP_URL,
    REDIS_URL,
    Client,
    Processes,
    delete_namespace,
    node,
    pod,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SERVICES = ("informer", "queue", "scheduler", "binder")
USER_TRACE = "5bf92f3577b34da6a3ce929d0e0e4737"
USER_SPAN = "10f067aa0ba902b8"
LINE = re.compile(
    r"^span (?P<name>.+?) (?P<kind>INTERNAL|PRODUCER|CONSUMER|CLIENT|SERVER) [\d.]+ms "
    r"trace=(?P<trace>[0-9a-f]{32}) id=(?P<id>[0-9a-f]{16}) parent=(?P<parent>[0-9a-f]{16}|-)"
    r"(?P<rest>.*)$"
)
WITHIN = 30.0
"""Seconds each awaited line may take to show."""
POLL_ROUNDS = 3
"""Rounds of each service's Redis polling an idle test waits for (about a second each)."""


class Span:
    def __init__(self, service: str, match: re.Match[str]) -> None:
        self.service = service
        self.name, self.kind = match["name"], match["kind"]
        self.trace, self.id, self.parent = match["trace"], match["id"], match["parent"]
        words = (word.partition("=") for word in match["rest"].split())
        self.attributes = {key: value for key, sep, value in words if sep}

    def __repr__(self) -> str:
        return f"{self.service}:{self.name}"


def spans(processes: Processes) -> list[Span]:
    return [
        Span(name, match)
        for name in SERVICES
        for line in processes.log(name).splitlines()
        if (match := LINE.match(line))
    ]


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, str]]:
    namespace = f"trace{uuid.uuid4().hex[:8]}"
    processes = Processes(namespace, tmp_path)
    connection = await aio_pika.connect_robust(AMQP_URL)
    store = RedisStore(REDIS_URL, namespace=namespace)
    client = Client(connection, namespace)
    env = {"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "always_on"}
    try:
        for name in SERVICES:
            await processes.start(name, "--log-format", "json", env=env)
        await client.open()
        yield processes, client, namespace
    finally:
        try:
            await processes.stop_all()
        finally:
            await delete_namespace(connection, namespace)
            await connection.close()
            await store.flush_namespace()
            await store.close()


async def test_one_pod_is_one_trace_through_four_processes(
    traced: tuple[Processes, Client, str],
) -> None:
    processes, client, namespace = traced
    await client.publish("node", node("node-a"))
    # The node's event is handled (its ingest span ended) before the pod is published,
    # so the pod's event is a batch of its own and continues the user's trace.
    await processes.logged("informer", "ksched.routing_key=node.added", WITHIN)
    body = json.dumps({"type": "ADDED", "object": pod("traced")}).encode()
    message = aio_pika.Message(
        body,
        content_type="application/json",
        headers={"traceparent": f"00-{USER_TRACE}-{USER_SPAN}-01"},
        message_id="pod-traced-1",
    )
    await client.events.publish(message, routing_key="pod.added")
    await client.wait_for(lambda: "e2e/traced" in client.bindings(), WITHIN)
    for service, name in (
        ("informer", "ingest"),
        ("queue", "scheduling_queue.pop"),
        ("scheduler", "scheduling_cycle"),
        ("binder", "binding_cycle"),
    ):
        await processes.logged(service, f"span {name} INTERNAL", WITHIN)

    in_trace = [s for s in spans(processes) if s.trace == USER_TRACE]
    by_name = {s.name: s for s in in_trace}
    chain = ["ingest", "scheduling_queue.pop", "scheduling_cycle", "binding_cycle"]
    assert set(chain) <= set(by_name), in_trace
    assert [by_name[n].service for n in chain] == list(SERVICES)
    assert by_name["ingest"].parent == USER_SPAN
    for parent, child in itertools.pairwise(chain):
        assert by_name[child].parent == by_name[parent].id, (child, parent)

    events_queue = f"{namespace}.ksched.informer.events"
    process = by_name[f"process {events_queue}"]
    assert (process.service, process.kind, process.parent) == ("informer", "CONSUMER", USER_SPAN)
    assert {
        "messaging.system": "rabbitmq",
        "messaging.destination.name": events_queue,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.rabbitmq.destination.routing_key": "pod.added",
        "messaging.message.id": "pod-traced-1",
    }.items() <= process.attributes.items()
    assert process.attributes["messaging.rabbitmq.message.delivery_tag"].isdigit()
    assert "messaging.batch.message_count" not in process.attributes  # one message
    publish = by_name[f"publish {namespace}.ksched.cluster"]
    batch = by_name["publish_cluster_batch"]  # the message's creation context
    assert (batch.parent, publish.kind, publish.parent) == (process.id, "CLIENT", batch.id)
    assert publish.attributes["messaging.operation.type"] == "send"
    assert publish.attributes["messaging.destination.name"] == f"{namespace}.ksched.cluster"
    store = [s for s in in_trace if s.kind == "CLIENT" and s.service == "informer"]
    assert store, in_trace
    assert {
        "db.system.name": "redis",
        "db.system": "redis",
        "db.namespace": "0",
        "server.address": "127.0.0.1",
        "server.port": "6379",
    }.items() <= store[0].attributes.items()
    assert store[0].attributes["db.operation.name"] in ("EVALSHA", "MGET", "GET")

    (binding,) = [h for _, body, h in client.decisions if body.get("kind") == "Binding"]
    assert binding["traceparent"].split("-")[1] == USER_TRACE

    for service in SERVICES:  # the logs are JSON lines naming their service
        logs = [json.loads(line) for line in processes.log(service).splitlines() if line[:1] == "{"]
        assert any(r["message"] == f"{service} started" for r in logs), service
        assert {r["service"] for r in logs} == {f"ksched-{service}"}


async def test_the_broker_hops_of_a_pod_are_spans_of_its_trace(
    traced: tuple[Processes, Client, str],
) -> None:
    processes, client, namespace = traced
    await client.publish("node", node("node-a"))
    await processes.logged("informer", "ksched.routing_key=node.added", WITHIN)
    body = json.dumps({"type": "ADDED", "object": pod("hops")}).encode()
    message = aio_pika.Message(
        body, headers={"traceparent": f"00-{USER_TRACE}-{USER_SPAN}-01"}, message_id="hops-1"
    )
    await client.events.publish(message, routing_key="pod.added")
    await client.wait_for(lambda: "e2e/hops" in client.bindings(), WITHIN)
    await processes.logged("binder", f"publish {namespace}.ksched.decisions", WITHIN)

    in_trace = [s for s in spans(processes) if s.trace == USER_TRACE]
    ids = {s.id for s in in_trace} | {USER_SPAN}
    assert [s for s in in_trace if s.parent not in ids] == []  # one tree under the user's
    names = {(s.service, s.name): s for s in in_trace}
    for publisher, exchange, consumer, queue in (
        ("informer", "ksched.cluster", "queue", "ksched.queue.cluster"),
        ("queue", "ksched.schedule", "scheduler", "ksched.scheduler.requests"),
        ("scheduler", "ksched.bind", "binder", "ksched.binder.requests"),
    ):
        publish = names[(publisher, f"publish {namespace}.{exchange}")]
        assert publish.kind == "CLIENT"  # the message's creation context is the pod's
        process = names[(consumer, f"process {namespace}.{queue}")]
        assert process.kind == "CONSUMER"
    decisions = names[("binder", f"publish {namespace}.ksched.decisions")]
    assert decisions.parent == names[("binder", "binding_cycle")].id


async def test_idle_services_start_no_trace(traced: tuple[Processes, Client, str]) -> None:
    """Every service polls Redis on its own (the informer's store check and the binder's
    permit timers each second, the watchdog's health checks): several rounds of that
    make no span, since no pod or message is behind them."""
    processes, _, namespace = traced
    rounds = {"informer": 0, "binder": 0}
    enough = asyncio.Event()
    monitor = aioredis.from_url(REDIS_URL)

    async def watch() -> None:
        async with monitor.monitor() as commands:
            async for command in commands.listen():
                text = str(command.get("command", ""))
                if text.startswith(f"MGET {namespace}:epoch"):
                    rounds["informer"] += 1
                elif text.startswith(f"ZRANGE {namespace}:wait:due"):
                    rounds["binder"] += 1
                if min(rounds.values()) >= POLL_ROUNDS:
                    enough.set()

    watching = asyncio.create_task(watch())
    try:
        async with asyncio.timeout(WITHIN):
            await enough.wait()
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        await monitor.aclose()
    await processes.stop_all()  # the console exporter wrote every ended span

    roots = [s for s in spans(processes) if s.parent == "-"]
    unexplained = [
        s
        for s in roots
        if "messaging.system" not in s.attributes and "ksched.pod" not in s.attributes
    ]
    assert unexplained == [], unexplained
    assert [s for s in spans(processes) if "db.system" in s.attributes] == []
