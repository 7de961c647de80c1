"""``ksched bench``: scheduler_perf-shaped workloads, timed from publish to Binding.

SchedulingBasic uses upstream's templates: nodes with 4 CPU, 32Gi memory and 110 pods;
pods requesting 100m CPU and 500Mi memory. The last line printed is one JSON object:
``{"workload", "mode", "nodes", "pods", "pods_per_second", "p50_ms", "p99_ms",
"max_rss_mb"}``; latency is from the publish of a pod's watch event to its Binding.

``embedded`` runs the whole pipeline in this process on the in-memory edges;
``services`` starts each service as its own process against the real RabbitMQ and Redis
(under a private namespace, removed afterwards) and talks to them over the bus only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import msgspec

from contracts import topology
from contracts.k8s import Binding, Decision
from services.cli.embedded import DecisionRecord, EmbeddedCluster
from services.cli.manifests import Document
from services.common.bus import Delivery, Message, open_bus
from services.common.clock import SystemClock
from services.common.settings import Settings, from_env
from services.common.store import open_store

NODE_CAPACITY = {"pods": "110", "cpu": "4", "memory": "32Gi"}
POD_REQUESTS = {"cpu": "100m", "memory": "500Mi"}


def node_document(i: int) -> Document:
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {"capacity": NODE_CAPACITY, "allocatable": NODE_CAPACITY},
    }
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Document(i, "node", body, topology.event_key("node", "ADDED"))


def pod_document(i: int) -> Document:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i}", "namespace": "bench", "uid": f"bench-pod-{i}"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": POD_REQUESTS, "limits": POD_REQUESTS},
                }
            ]
        },
    }
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Document(i, "pod", body, topology.event_key("pod", "ADDED"))


class Timings:
    def __init__(self, pods: int) -> None:
        self.expected = pods
        self.published: dict[str, float] = {}
        self.decided: dict[str, float] = {}
        self.done = asyncio.Event()

    def decision(self, pod: str, at: float) -> None:
        if pod not in self.decided:
            self.decided[pod] = at
            if len(self.decided) >= self.expected:
                self.done.set()

    def report(self, workload: str, mode: str, nodes: int, started: float) -> dict[str, object]:
        latencies = sorted(
            (self.decided[p] - self.published[p]) * 1000
            for p in self.decided
            if p in self.published
        )
        elapsed = max(self.decided.values()) - started
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        return {
            "workload": workload,
            "mode": mode,
            "nodes": nodes,
            "pods": len(self.decided),
            "pods_per_second": round(len(self.decided) / elapsed, 1),
            "p50_ms": round(_percentile(latencies, 0.50), 1),
            "p99_ms": round(_percentile(latencies, 0.99), 1),
            "max_rss_mb": round(max(own, children) / 1024, 1),
        }


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]


async def _publish_pods(publish: object, docs: Sequence[Document], timings: Timings) -> float:
    started = time.time()
    for start in range(0, len(docs), 500):
        chunk = docs[start : start + 500]
        now = time.time()
        for d in chunk:
            timings.published[f"bench/pod-{d.index}"] = now
        await publish(chunk)  # type: ignore[operator]
    return started


async def bench_embedded(nodes: int, pods: int) -> dict[str, object]:
    timings = Timings(pods)

    def seen(record: DecisionRecord) -> None:
        timings.decision(record.pod, time.time())

    cluster = EmbeddedCluster(clock=SystemClock(), hold=False, seed=0, on_decision=seen)
    await cluster.start()
    try:
        await cluster.publish([node_document(i) for i in range(nodes)])
        await cluster.bus.wait_idle()
        started = await _publish_pods(
            cluster.publish, [pod_document(i) for i in range(pods)], timings
        )
        await timings.done.wait()
    finally:
        await cluster.stop()
    return timings.report("SchedulingBasic", "embedded", nodes, started)


async def bench_services(nodes: int, pods: int, settings: Settings) -> dict[str, object]:
    namespace = f"bench{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="ksched-bench-"))
    flags = ["--amqp-url", settings.amqp_url, "--redis-url", settings.redis_url]
    flags += ["--namespace", namespace]
    command = [sys.executable, "-m", "services.cli.main", "run"]
    bus = open_bus(settings.amqp_url, namespace=namespace)
    store = open_store(settings.redis_url, namespace=namespace)
    timings = Timings(pods)
    watch = topology.QueueSpec(
        f"ksched.bench.{namespace}",
        (topology.Binding(topology.DECISIONS.name, "binding.*"),),
        durable=False,
        exclusive=True,
        auto_delete=True,
        dead_letter=False,
    )

    async def on_decisions(deliveries: Sequence[Delivery]) -> None:
        now = time.time()
        for delivery in deliveries:
            decision = msgspec.json.decode(delivery.body, type=Decision)
            if isinstance(decision, Binding):
                meta = decision.metadata
                timings.decision(f"{meta.namespace}/{meta.name}", now)

    children: list[asyncio.subprocess.Process] = []
    try:
        await bus.declare(topology.QUEUES)
        await bus.consume(watch, on_decisions, max_batch=1024)
        env = {**os.environ, "KSCHED_EVENT_LOG": str(workdir / "events.jsonl")}
        for name in ("informer", "queue", "scheduler", "binder"):
            children.append(await asyncio.create_subprocess_exec(*command, name, *flags, env=env))
        node_docs = [node_document(i) for i in range(nodes)]
        for start in range(0, nodes, 1000):
            await bus.publish(
                [
                    Message(topology.EVENTS.name, d.routing_key, d.body)
                    for d in node_docs[start : start + 1000]
                ]
            )
        # Poll: the informer has projected every node once the store has applied them.
        while await store.applied_seq() < nodes:  # noqa: ASYNC110
            await asyncio.sleep(0.05)

        async def publish(chunk: Sequence[Document]) -> None:
            await bus.publish([Message(topology.EVENTS.name, d.routing_key, d.body) for d in chunk])

        started = await _publish_pods(publish, [pod_document(i) for i in range(pods)], timings)
        await timings.done.wait()
    finally:
        for child in children:
            child.terminate()
        for child in children:
            await child.wait()
        await _cleanup(bus, store)
    # After the children are reaped, so that their peak memory counts in max_rss_mb.
    return timings.report("SchedulingBasic", "services", nodes, started)


async def _cleanup(bus: object, store: object) -> None:
    for target in (store, bus):
        for method in ("flush_namespace", "delete_namespace"):
            if hasattr(target, method):
                await getattr(target, method)()
        await target.close()  # type: ignore[attr-defined]


def bench_command(args: argparse.Namespace) -> int:
    if args.mode == "embedded":
        report = asyncio.run(bench_embedded(args.nodes, args.pods))
    else:
        settings = from_env(amqp_url=args.amqp_url, redis_url=args.redis_url)
        report = asyncio.run(bench_services(args.nodes, args.pods, settings))
    print(json.dumps(report))
    return 0
