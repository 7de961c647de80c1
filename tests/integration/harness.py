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
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aio_pika
import msgspec
import redis.asyncio as aioredis

from contracts import topology
from contracts.k8s import Node, Pod
from contracts.quantity import resource_amount
from contracts.queueview import QueueView
from services.cli.serviceflags import argv_for
from services.common.store.redis import RedisStore
from tests.builders import container, make_node, make_pod

AMQP_URL = os.environ.get("KSCHED_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
REDIS_URL = os.environ.get("KSCHED_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
"""Seconds a service has to exit after SIGTERM."""


class Processes:
    """The ksched services of one test, each its own OS process."""

    def __init__(
        self, namespace: str, workdir: Path, *, amqp_url: str = AMQP_URL, redis_url: str = REDIS_URL
    ) -> None:
        self.namespace = namespace
        self.amqp_url = amqp_url
        self.redis_url = redis_url
        self.workdir = workdir
        self.children: dict[str, asyncio.subprocess.Process] = {}
        self._logs: dict[str, list[str]] = defaultdict(list)
        self._readers: list[asyncio.Task[None]] = []
        self._line = asyncio.Event()

    def flags(self) -> list[str]:
        return [
            "--amqp-url",
            self.amqp_url,
            "--redis-url",
            self.redis_url,
            "--namespace",
            self.namespace,
            "--event-log",
            str(self.workdir / "events.jsonl"),
            "--seed",
            "1",
        ]

    async def start(
        self, name: str, *flags: str, key: str | None = None, env: dict[str, str] | None = None
    ) -> None:
        """Start ``name`` and return once it logged that it started (no sleeping).
        ``key``: this process's name among the children (a second replica); ``env``:
        variables added to this process's environment."""
        started = await self.spawn(name, *flags, key=key, env=env)
        try:
            await asyncio.wait_for(started.wait(), START_TIMEOUT)
        except TimeoutError:
            raise AssertionError(f"{name} did not start:\n" + "\n".join(self._logs[name])) from None

    async def spawn(
        self, name: str, *flags: str, key: str | None = None, env: dict[str, str] | None = None
    ) -> asyncio.Event:
        """Start ``name`` (``flags`` override ``self.flags()``; as ``ksched up``, each
        service is given those it honours) as child ``key`` (default ``name``); the
        event is set once it logged that it started."""
        given = argv_for(name, [*self.flags(), *flags])
        command = [sys.executable, "-m", "services.cli.main", "run", name, *given]
        child = await asyncio.create_subprocess_exec(
            *command,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env} if env else None,
        )
        key = key or name
        self.children[key] = child
        self._logs[key].append(f"--- pid {child.pid}")
        started = asyncio.Event()
        self._readers.append(asyncio.create_task(self._read(key, child, started, name)))
        return started

    async def logged(self, name: str, text: str, within: float = START_TIMEOUT) -> None:
        """Wait until the current process of ``name`` logged a line containing ``text``."""
        async with asyncio.timeout(within):
            while not any(text in line for line in self._current_log(name)):
                self._line.clear()
                await self._line.wait()

    async def until(self, condition: Callable[[], bool], within: float = START_TIMEOUT) -> None:
        """Wait until ``condition()`` holds, checked again after each line logged."""
        async with asyncio.timeout(within):
            while not condition():
                self._line.clear()
                await self._line.wait()

    def _current_log(self, name: str) -> list[str]:
        lines = self._logs[name]
        starts = [i for i, line in enumerate(lines) if line.startswith("--- pid ")]
        return lines[starts[-1] :] if starts else lines

    async def _read(
        self,
        key: str,
        child: asyncio.subprocess.Process,
        started: asyncio.Event,
        service: str | None = None,
    ) -> None:
        assert child.stderr is not None
        async for raw in child.stderr:
            line = raw.decode(errors="replace").rstrip()
            self._logs[key].append(line)
            self._line.set()
            if f"{service or key} started" in line:
                started.set()

    async def terminate(self, name: str, sig: int = signal.SIGTERM) -> int:
        """Send ``sig`` to ``name``; its exit code, which must come within STOP_TIMEOUT."""
        child = self.children[name]
        child.send_signal(sig)
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                return await child.wait()
        except TimeoutError:
            child.kill()
            await child.wait()
            raise AssertionError(
                f"{name} did not exit within {STOP_TIMEOUT:g} s of {signal.Signals(sig).name}:\n"
                + "\n".join(self._current_log(name)[-30:])
            ) from None

    async def kill9(self, name: str) -> None:
        child = self.children.pop(name)
        child.send_signal(signal.SIGKILL)
        await child.wait()

    async def stop_all(self) -> None:
        """SIGTERM every service; each must exit within STOP_TIMEOUT (else it is killed
        and this fails, naming it)."""
        running = [name for name, child in self.children.items() if child.returncode is None]
        results = await asyncio.gather(
            *(self.terminate(name) for name in running), return_exceptions=True
        )
        for reader in self._readers:
            reader.cancel()
        for result in results:
            if isinstance(result, BaseException):
                raise result

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
        self.entries: list[dict[str, Any]] = []
        """Every log entry republished on ksched.cluster, in arrival order."""
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
                self.entries.append(entry)
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
    """``make_node`` labelled with its hostname, as the wire carries it: a JSON object
    the test may still change before publishing it."""
    built = make_node(
        name,
        allocatable={"cpu": cpu, "memory": memory, "pods": pods},
        labels={"kubernetes.io/hostname": name},
    )
    return _wire(built)


def pod(
    name: str, cpu: str = "100m", memory: str = "128Mi", namespace: str = "e2e"
) -> dict[str, Any]:
    """``make_pod`` with one nginx container requesting ``cpu`` and ``memory``, uid
    ``uid-<name>``, as the wire carries it (see :func:`node`)."""
    app = container({"cpu": cpu, "memory": memory}, name="app", image="nginx")
    return _wire(make_pod(name, namespace, uid=f"uid-{name}", requests=[app]))


def _wire(obj: Node | Pod) -> dict[str, Any]:
    return {"apiVersion": "v1", **msgspec.to_builtins(obj)}


async def assert_store_within_allocatable(store: RedisStore) -> None:
    """The store's usage of every node is within its allocatable."""
    usage, allocatable = await store.node_usage(), await store.allocatable()
    for name, used in usage.items():
        for resource, amount in used.items():
            assert amount <= allocatable[name].get(resource, 0), (name, resource)


async def assert_no_overcommit(
    client: Client, store: RedisStore, *, cpu_per_pod: str = "100m", node_cpu: str = "8"
) -> None:
    """Neither the bindings the user saw (pods of ``cpu_per_pod`` on nodes of
    ``node_cpu``, the defaults of :func:`pod` and :func:`node`) nor the store's usage
    exceed any node."""
    per_node = Counter(nodes[0] for nodes in client.bindings().values())
    capacity = resource_amount("cpu", node_cpu)
    for name, count in per_node.items():
        assert count * resource_amount("cpu", cpu_per_pod) <= capacity, name
    await assert_store_within_allocatable(store)


async def assert_bound_exactly_once(client: Client, store: RedisStore, pods: int) -> None:
    """``pods`` pods were bound, each to one node, which the store and the user's
    Binding name alike."""
    await client.wait_for(lambda: len(client.recorded) >= pods)
    bindings = client.bindings()
    assert len(bindings) == pods
    for name, targets in bindings.items():
        assert len(set(targets)) == 1, f"{name} bound to {targets}"
    stored = {k: json.loads(v) for k, v in (await store.objects("pod")).items()}
    for name, targets in bindings.items():
        assert stored[name]["spec"]["nodeName"] == targets[0] == client.recorded[name]


async def delete_namespace(
    connection: aio_pika.abc.AbstractRobustConnection, namespace: str
) -> None:
    channel = await connection.channel()
    for queue in topology.QUEUES:
        await channel.queue_delete(f"{namespace}.{queue.name}")
    for exchange in topology.EXCHANGES:
        await channel.exchange_delete(f"{namespace}.{exchange.name}")
    await channel.close()


async def running_cluster(
    tmp_path: Path, prefix: str, *flags: str, replicas: int = 1, binders: int | None = None
) -> AsyncIterator[tuple[Processes, Client, RedisStore]]:
    """The four services under a fresh namespace (``prefix`` + 8 hex digits) with
    ``flags``: one informer and one queue (the only dispatcher), ``replicas`` schedulers
    and ``binders`` binders (default: as many); a client; the store. Everything is
    stopped and deleted afterwards."""
    namespace = f"{prefix}{uuid.uuid4().hex[:8]}"
    processes = Processes(namespace, tmp_path)
    connection = await aio_pika.connect_robust(AMQP_URL)
    store = RedisStore(REDIS_URL, namespace=namespace)
    client = Client(connection, namespace)
    try:
        await processes.start("informer", *flags)
        await processes.start("queue", *flags)
        counts = {"scheduler": replicas, "binder": replicas if binders is None else binders}
        for name, count in counts.items():
            await processes.start(name, *flags)
            for i in range(2, count + 1):
                await processes.start(name, *flags, key=f"{name}-{i}")
        await client.open()
        yield processes, client, store
    finally:
        try:
            await processes.stop_all()
        finally:
            await delete_namespace(connection, namespace)
            await connection.close()
            await store.flush_namespace()
            await store.close()


async def until_true(check: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    """Poll a store condition for at most ``within`` s: no message announces a state of
    the store (the queue dropped its last lease, the last reservation was recorded)."""
    async with asyncio.timeout(within):
        while not await check():  # noqa: ASYNC110 (a Redis state, not an event)
            await asyncio.sleep(0.1)


async def quiet(store: RedisStore, within: float = 120.0) -> None:
    """Wait until nothing is in flight: no lease, no reservation, and the queue's view
    (taken after the last entry the store applied) has no pod active, backing off or
    in flight. Raises TimeoutError after ``within`` s."""

    async def idle() -> bool:
        if await store.leases() or await store.assumed():
            return False
        raw = await store.queue_view()
        if raw is None:
            return False
        view = msgspec.json.decode(raw, type=QueueView)
        busy = sum(view.counts.get(q, 0) for q in ("active", "backoff", "inflight"))
        return busy == 0 and view.applied_seq >= await store.applied_seq()

    await until_true(idle, within)


_LOSE = """
local keys = redis.call('KEYS', ARGV[1])
for i = 1, #keys, 1000 do
  redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys)))
end
return #keys
"""


async def lose_namespace(namespace: str) -> None:
    """Delete every key of ``namespace`` in one atomic step, as FLUSHDB would empty the
    database (never FLUSHDB itself: other tests share this Redis). RedisStore's
    flush_namespace deletes in batches, which a rebuild could interleave with."""
    client = aioredis.from_url(REDIS_URL)
    try:
        deleted = await client.eval(_LOSE, 0, f"{namespace}:*")
        assert deleted > 0
    finally:
        await client.aclose()
