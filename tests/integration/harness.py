"""Real RabbitMQ + Redis, real service processes. Each test gets its own namespace, so its
exchanges, queues and Redis keys are its own, and they are removed afterwards.

The client side of these tests is deliberately plain aio-pika speaking only the
documented contract (exchange names, routing keys, JSON bodies)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import aio_pika

from contracts import topology

AMQP_URL = os.environ.get("KSCHED_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
REDIS_URL = os.environ.get("KSCHED_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
START_TIMEOUT = 60.0


class Processes:
    """The ksched services of one test, each its own OS process."""

    def __init__(self, namespace: str, workdir: Path) -> None:
        self.namespace = namespace
        self.workdir = workdir
        self.children: dict[str, asyncio.subprocess.Process] = {}
        self._logs: dict[str, list[str]] = defaultdict(list)
        self._readers: list[asyncio.Task[None]] = []

    def flags(self) -> list[str]:
        return [
            "--amqp-url",
            AMQP_URL,
            "--redis-url",
            REDIS_URL,
            "--namespace",
            self.namespace,
            "--event-log",
            str(self.workdir / "events.jsonl"),
            "--seed",
            "1",
        ]

    async def start(self, name: str) -> None:
        """Start ``name`` and return once it logged that it started (no sleeping)."""
        command = [sys.executable, "-m", "services.cli.main", "run", name, *self.flags()]
        child = await asyncio.create_subprocess_exec(*command, stderr=asyncio.subprocess.PIPE)
        self.children[name] = child
        started = asyncio.Event()
        self._readers.append(asyncio.create_task(self._read(name, child, started)))
        try:
            await asyncio.wait_for(started.wait(), START_TIMEOUT)
        except TimeoutError:
            raise AssertionError(f"{name} did not start:\n" + "\n".join(self._logs[name])) from None

    async def _read(
        self, name: str, child: asyncio.subprocess.Process, started: asyncio.Event
    ) -> None:
        assert child.stderr is not None
        async for raw in child.stderr:
            line = raw.decode(errors="replace").rstrip()
            self._logs[name].append(line)
            if f"{name} started" in line:
                started.set()

    async def kill9(self, name: str) -> None:
        child = self.children.pop(name)
        child.send_signal(signal.SIGKILL)
        await child.wait()

    async def stop_all(self) -> None:
        for child in self.children.values():
            if child.returncode is None:
                child.terminate()
        for child in self.children.values():
            await child.wait()
        for reader in self._readers:
            reader.cancel()

    def log(self, name: str) -> str:
        return "\n".join(self._logs[name])


class Client:
    """A user of ksched with nothing but aio-pika and the documented contract."""

    def __init__(self, connection: aio_pika.abc.AbstractRobustConnection, namespace: str) -> None:
        self.connection = connection
        self.prefix = f"{namespace}."
        self.decisions: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        self.errors: list[dict[str, Any]] = []
        self.recorded: dict[str, str] = {}
        """pod → node for every binding the informer recorded in the log (ksched.cluster)."""
        self.arrived = asyncio.Event()

    async def open(self) -> None:
        self.channel = await self.connection.channel(publisher_confirms=True)
        self.events = await self.channel.declare_exchange(
            self.prefix + "ksched.events", aio_pika.ExchangeType.TOPIC, durable=True
        )
        for exchange, sink in (("ksched.decisions", self.decisions), ("ksched.errors", None)):
            ex = await self.channel.declare_exchange(
                self.prefix + exchange, aio_pika.ExchangeType.TOPIC, durable=True
            )
            queue = await self.channel.declare_queue(exclusive=True, auto_delete=True)
            await queue.bind(ex, "#")
            await queue.consume(self._on_decision if sink is not None else self._on_error)
        cluster = await self.channel.declare_exchange(
            self.prefix + "ksched.cluster", aio_pika.ExchangeType.FANOUT, durable=True
        )
        feed = await self.channel.declare_queue(exclusive=True, auto_delete=True)
        await feed.bind(cluster, "")
        await feed.consume(self._on_cluster)

    async def _on_cluster(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            for entry in json.loads(message.body)["events"]:
                if entry["kind"] == "pod" and entry.get("origin") == "binding":
                    meta = entry["object"]["metadata"]
                    self.recorded[f"{meta['namespace']}/{meta['name']}"] = entry["object"]["spec"][
                        "nodeName"
                    ]
            self.arrived.set()

    async def _on_decision(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            self.decisions.append(
                (message.routing_key or "", json.loads(message.body), dict(message.headers))
            )
            self.arrived.set()

    async def _on_error(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            self.errors.append(json.loads(message.body))
            self.arrived.set()

    async def publish(
        self,
        kind: str,
        obj: dict[str, Any] | bytes,
        type_: str = "ADDED",
        *,
        key: str | None = None,
    ) -> None:
        body = (
            obj if isinstance(obj, bytes) else json.dumps({"type": type_, "object": obj}).encode()
        )
        message = aio_pika.Message(
            body, content_type="application/json", delivery_mode=aio_pika.DeliveryMode.PERSISTENT
        )
        await self.events.publish(message, routing_key=key or f"{kind}.{type_.lower()}")

    def bindings(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for _key, body, _ in self.decisions:
            if body.get("kind") == "Binding":
                meta = body["metadata"]
                out[f"{meta['namespace']}/{meta['name']}"].append(body["target"]["name"])
        return out

    def events_with(self, reason: str) -> list[dict[str, Any]]:
        return [
            b
            for _, b, _ in self.decisions
            if b.get("kind") == "Event" and b.get("reason") == reason
        ]

    async def wait_for(self, condition: Any, within: float = 60.0) -> None:
        """Wait until ``condition()`` holds, woken by each arriving message."""
        async with asyncio.timeout(within):
            while not condition():
                self.arrived.clear()
                await self.arrived.wait()


def node(name: str, cpu: str = "8", memory: str = "32Gi", pods: str = "110") -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(
    name: str, cpu: str = "100m", memory: str = "128Mi", namespace: str = "e2e"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ]
        },
    }


async def delete_namespace(
    connection: aio_pika.abc.AbstractRobustConnection, namespace: str
) -> None:
    channel = await connection.channel()
    for queue in topology.QUEUES:
        await channel.queue_delete(f"{namespace}.{queue.name}")
    for exchange in topology.EXCHANGES:
        await channel.exchange_delete(f"{namespace}.{exchange.name}")
    await channel.close()
