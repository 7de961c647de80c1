"""Traces across real processes: the four services on RabbitMQ and Redis with
``OTEL_TRACES_EXPORTER=console`` (one line per span on each one's stderr) and
``--log-format json``. One pod published with a ``traceparent`` comes out as one
trace: the user's span → the informer's ``process`` (CONSUMER) and ``ingest`` → the
queue's ``scheduling_queue.pop`` → the scheduler's ``scheduling_cycle`` → the binder's
``binding_cycle``, with the messaging and database attributes on the bus and store
spans, and the Binding's headers still carry it. Every broker hop of the pod is in its
trace (publish and process spans as children), and idle services send no trace over
OTLP (to a receiver of the test's own, as to Jaeger): a root span always has a message
or a pod behind it."""

from __future__ import annotations

import asyncio
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
from tests.integration.otlp_receiver import OTLPReceiver

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
BEHIND = frozenset(("messaging.system", "ksched.pod", "ksched.routing_key"))
"""Attributes of a span with a message (a bus span; ``ingest``, which starts the trace
of a watch event published without one) or a pod behind it."""
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
    # The node's batch is handled by the queue before the pod is published, so the
    # pod's cluster batch is a delivery of its own there (a batch of both would be a
    # child of the node's trace, linking to the pod's).
    await processes.logged("queue", f"span process {namespace}.ksched.queue.cluster", WITHIN)
    body = json.dumps({"type": "ADDED", "object": pod("hops")}).encode()
    message = aio_pika.Message(
        body, headers={"traceparent": f"00-{USER_TRACE}-{USER_SPAN}-01"}, message_id="hops-1"
    )
    await client.events.publish(message, routing_key="pod.added")
    await client.wait_for(lambda: "e2e/hops" in client.bindings(), WITHIN)

    for publisher, exchange, consumer, queue in (
        ("informer", "ksched.cluster", "queue", "ksched.queue.cluster"),
        ("queue", "ksched.schedule", "scheduler", "ksched.scheduler.requests"),
        ("scheduler", "ksched.bind", "binder", "ksched.binder.requests"),
        ("binder", "ksched.bound", "informer", "ksched.informer.bindings"),
        ("binder", "ksched.decisions", None, None),
    ):
        publish = await pod_span(processes, publisher, f"publish {namespace}.{exchange}")
        assert publish.kind == "CLIENT", publish  # the message's creation context: the pod's
        if consumer is not None:
            process = await pod_span(processes, consumer, f"process {namespace}.{queue}")
            assert process.kind == "CONSUMER"
            assert process.parent == publish.parent  # both children of the pod's span
    by_name = {(s.service, s.name): s for s in spans(processes) if s.trace == USER_TRACE}
    decisions = by_name[("binder", f"publish {namespace}.ksched.decisions")]
    assert decisions.parent == by_name[("binder", "binding_cycle")].id
    schedule = by_name[("queue", f"publish {namespace}.ksched.schedule")]
    assert schedule.parent == by_name[("queue", "scheduling_queue.pop")].id
    bind = by_name[("scheduler", f"publish {namespace}.ksched.bind")]
    assert bind.parent == by_name[("scheduler", "scheduling_cycle")].id


async def pod_span(processes: Processes, service: str, name: str) -> Span:
    """The span ``name`` of ``service`` in the user's trace, once it has ended."""

    def found() -> list[Span]:
        return [
            s
            for s in spans(processes)
            if (s.service, s.name, s.trace) == (service, name, USER_TRACE)
        ]

    await processes.until(lambda: bool(found()), WITHIN)
    return found()[0]


async def test_idle_services_send_no_trace_over_otlp(tmp_path: Path) -> None:
    """Every service polls Redis on its own (the informer's store check and the binder's
    permit timers each second, the watchdog's health checks): several rounds of that,
    exported over OTLP as to Jaeger, make no root span without a message or a pod behind
    it. A watch event published afterwards shows that the export works."""
    namespace = f"idle{uuid.uuid4().hex[:8]}"
    processes = Processes(namespace, tmp_path)
    connection = await aio_pika.connect_robust(AMQP_URL)
    client = Client(connection, namespace)
    monitor = aioredis.from_url(REDIS_URL)
    store = RedisStore(REDIS_URL, namespace=namespace)
    try:
        with OTLPReceiver() as receiver:
            env = {
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint,
                "OTEL_TRACES_SAMPLER": "always_on",
            }
            for name in SERVICES:
                await processes.start(name, env=env)
            await client.open()
            await poll_rounds(monitor, namespace, POLL_ROUNDS)
            await client.publish("node", node("node-a"))  # a message: its trace is fine
            await client.wait_for(lambda: bool(client.entries), WITHIN)
            await processes.stop_all()  # each exporter flushes as its process exits
            received = list(receiver.spans)
            informer_log = processes.log("informer")
    finally:
        try:
            await processes.stop_all()
        finally:
            await delete_namespace(connection, namespace)
            await connection.close()
            await monitor.aclose()
            await store.flush_namespace()
            await store.close()

    events_queue = f"{namespace}.ksched.informer.events"
    assert any(s.name == f"process {events_queue}" for s in received), received  # exported
    unexplained = [s for s in received if s.root and not BEHIND.intersection(s.attributes)]
    # Once (a full suite run, not reproduced in 10 runs since, 6 of them beside two CPU
    # hogs) the informer sent a root publish_cluster_batch: a catch-up outside any
    # handler. Say which entries it carried and what the informer logged.
    why = [line for line in informer_log.splitlines() if " WARNING " in line or " ERROR " in line]
    assert unexplained == [], ([(s, s.attributes) for s in unexplained], why)
    assert [s for s in received if s.root and "db.system" in s.attributes] == []


async def poll_rounds(monitor: aioredis.Redis, namespace: str, rounds: int) -> None:
    """Return once Redis has seen ``rounds`` of both the informer's store check (``MGET
    epoch``) and the binder's permit timer (``ZRANGE wait:due``) in ``namespace``."""
    seen = {"informer": 0, "binder": 0}
    async with asyncio.timeout(WITHIN), monitor.monitor() as commands:
        async for command in commands.listen():
            text = str(command.get("command", ""))
            if text.startswith(f"MGET {namespace}:epoch"):
                seen["informer"] += 1
            elif text.startswith(f"ZRANGE {namespace}:wait:due"):
                seen["binder"] += 1
            if min(seen.values()) >= rounds:
                return
