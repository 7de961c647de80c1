"""``ksched bench WORKLOAD``: upstream scheduler_perf's workload shapes, timed.

The workloads (SchedulingBasic, SchedulingNodeAffinity, TopologySpreading,
SchedulingPodAntiAffinity, SchedulingPodAffinity, Unschedulable) and their templates
are in cli.workloads. Modes:

- ``cycle``: the scheduling cycle alone in this process (cli.bench_cycle); latency is
  one pod's PodInfo + schedule_one + assume.
- ``embedded``: the whole pipeline in this process on the in-memory edges; latency is
  from the publish of a measured pod's watch event to its decision.
- ``services``: each service as its own process against the real RabbitMQ and Redis
  (under a private namespace, removed afterwards), talked to over the bus only;
  latency is from publish to Binding.

A workload with churn (Unschedulable) runs in the embedded and services modes only:
while the measured pods are scheduled, cli.bench_churn publishes its churn pods in real
time, and only the measured pods are timed.

The scheduler runs the default profile, so every plugin registered there takes part.
The last line printed is one JSON object: ``{"workload", "mode", "nodes", "init_pods",
"pods", "pods_per_second", "p50_ms", "p99_ms", "max_rss_mb"}``, plus, in services
mode, ``"peak_rss_mb"``: each service process's peak resident memory (``VmHWM``, read
from ``/proc`` just before it is stopped; also printed one line per service), plus
``"unschedulable"`` in cycle mode and ``"unschedulable_churn"`` (churn pods published)
for a workload with churn. ``ksched bench QueueOps [--pods N]`` prints instead what the
queue's own benchmark returns (``services.queue.bench.queue_ops``: operations per
second of the queue core, no bus or store), whatever ``--mode``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from contracts import topology
from contracts.k8s import Binding, Decision
from services.cli.bench_churn import ChurnOp
from services.cli.bench_cycle import run_cycle
from services.cli.embedded import DecisionRecord, EmbeddedCluster
from services.cli.manifests import Document
from services.cli.workloads import WORKLOADS, Workload
from services.common.bus import Delivery, Message, open_bus
from services.common.clock import SystemClock
from services.common.settings import ENV, Settings, from_env
from services.common.store import open_store

Publish = Callable[[Sequence[Document]], Awaitable[None]]


def document(index: int, kind: str, obj: dict[str, Any]) -> Document:
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Document(index, kind, body, topology.event_key(kind, "ADDED"))


def setup_documents(workload: Workload, nodes: int, init: int) -> list[Document]:
    """The nodes, then the init pods bound to them."""
    docs = [document(i, "node", workload.node(i)) for i in range(nodes)]
    return docs + [document(i, "pod", workload.init(i, nodes)) for i in range(init)]


def summary(
    workload: str,
    mode: str,
    counts: tuple[int, int, int],
    latencies_ms: list[float],
    elapsed: float,
) -> dict[str, object]:
    """The final JSON line; ``counts`` is (nodes, init pods, measured pods done)."""
    nodes, init, done = counts
    latencies_ms = sorted(latencies_ms)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "workload": workload,
        "mode": mode,
        "nodes": nodes,
        "init_pods": init,
        "pods": done,
        "pods_per_second": round(done / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(_percentile(latencies_ms, 0.50), 3 if mode == "cycle" else 1),
        "p99_ms": round(_percentile(latencies_ms, 0.99), 3 if mode == "cycle" else 1),
        "max_rss_mb": round(max(own, children) / 1024, 1),
    }


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]


class Timings:
    """Publish and decision times of the measured pods (wall clock, seconds)."""

    def __init__(self, pods: int) -> None:
        self.expected = pods
        self.published: dict[str, float] = {}
        self.decided: dict[str, float] = {}
        self.done = asyncio.Event()

    def decision(self, pod: str, at: float) -> None:
        if pod in self.published and pod not in self.decided:
            self.decided[pod] = at
            if len(self.decided) >= self.expected:
                self.done.set()

    def latencies_ms(self) -> list[float]:
        return [(at - self.published[pod]) * 1000 for pod, at in self.decided.items()]

    async def publish(self, publish: Publish, workload: Workload, pods: int) -> float:
        """Publish the measured pods as fast as possible; returns when it started."""
        started = time.time()
        for start in range(0, pods, 500):
            chunk = range(start, min(start + 500, pods))
            now = time.time()
            for i in chunk:
                self.published[workload.measured_key(i)] = now
            await publish([document(i, "pod", workload.measured(i)) for i in chunk])
        return started


async def bench_embedded(workload: Workload, nodes: int, init: int, pods: int) -> dict[str, object]:
    timings = Timings(pods)

    def seen(record: DecisionRecord) -> None:
        timings.decision(record.pod, time.time())

    cluster = EmbeddedCluster(clock=SystemClock(), hold=False, seed=0, on_decision=seen)
    churn = ChurnOp(workload.churn, cluster.publish) if workload.churn else None
    await cluster.start()
    try:
        await cluster.publish(setup_documents(workload, nodes, init))
        await cluster.bus.wait_idle()
        started = await _measure(timings, cluster.publish, workload, pods, churn)
    finally:
        await cluster.stop()
    elapsed = max(timings.decided.values()) - started
    counts = (nodes, init, len(timings.decided))
    report = summary(workload.name, "embedded", counts, timings.latencies_ms(), elapsed)
    return _with_churn(report, churn)


async def _measure(
    timings: Timings, publish: Publish, workload: Workload, pods: int, churn: ChurnOp | None
) -> float:
    """Publish the measured pods (and the churn, if any, until they are all decided) and
    wait for their decisions; returns when the measurement started."""
    if churn is not None:
        await churn.start()
    try:
        started = await timings.publish(publish, workload, pods)
        await timings.done.wait()
    finally:
        if churn is not None:
            await churn.stop()
    return started


def _with_churn(report: dict[str, object], churn: ChurnOp | None) -> dict[str, object]:
    if churn is not None:
        report["unschedulable_churn"] = churn.published
    return report


async def bench_services(
    workload: Workload, nodes: int, init: int, pods: int, settings: Settings
) -> dict[str, object]:
    namespace = f"bench{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="ksched-bench-"))
    flags = ["--amqp-url", settings.amqp_url, "--redis-url", settings.redis_url]
    flags += ["--namespace", namespace]
    command = [sys.executable, "-m", "services.cli.main", "run"]
    bus = open_bus(settings.amqp_url, namespace=namespace, tls=settings.tls)
    store = open_store(settings.redis_url, namespace=namespace, tls=settings.tls)
    timings = Timings(pods)
    watch = topology.QueueSpec(
        f"ksched.bench.{namespace}",
        (topology.QueueBinding(topology.DECISIONS.name, "binding.*"),),
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

    async def publish(chunk: Sequence[Document]) -> None:
        await bus.publish([Message(topology.EVENTS.name, d.routing_key, d.body) for d in chunk])

    churn = ChurnOp(workload.churn, publish) if workload.churn else None
    children: list[asyncio.subprocess.Process] = []
    peaks: dict[str, float | None] = {}
    try:
        await bus.declare(topology.QUEUES)
        await bus.consume_raw(watch, on_decisions, max_batch=1024)
        env = {**os.environ, **tls_env(settings), "KSCHED_EVENT_LOG": str(workdir / "events.jsonl")}
        for name in SERVICES:
            children.append(await asyncio.create_subprocess_exec(*command, name, *flags, env=env))
        setup = setup_documents(workload, nodes, init)
        for start in range(0, len(setup), 1000):
            await publish(setup[start : start + 1000])
        # Poll: the informer has projected the setup once the store has applied it all.
        while await store.applied_seq() < len(setup):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        started = await _measure(timings, publish, workload, pods, churn)
        peaks = {name: peak_rss_mb(c.pid) for name, c in zip(SERVICES, children, strict=True)}
    finally:
        for child in children:
            child.terminate()
        for child in children:
            await child.wait()
        await _cleanup(bus, store)
    # After the children are reaped, so that their peak memory counts in max_rss_mb.
    elapsed = max(timings.decided.values()) - started
    counts = (nodes, init, len(timings.decided))
    report = summary(workload.name, "services", counts, timings.latencies_ms(), elapsed)
    report["peak_rss_mb"] = peaks
    for name, peak in peaks.items():
        shown = "unknown (no /proc)" if peak is None else f"{peak:.1f} MB"
        print(f"{name}: peak RSS {shown}", file=sys.stderr)
    return _with_churn(report, churn)


SERVICES = ("informer", "queue", "scheduler", "binder")


def tls_env(settings: Settings) -> dict[str, str]:
    """The ``KSCHED_TLS_*`` variables for ``settings``' TLS files, so the service
    processes use the same files as the bench's own bus and store."""
    files = {"tls_ca": settings.tls_ca, "tls_cert": settings.tls_cert, "tls_key": settings.tls_key}
    return {ENV[name]: path for name, path in files.items() if path is not None}


def peak_rss_mb(pid: int) -> float | None:
    """The peak resident memory of process ``pid`` (``VmHWM`` in ``/proc/<pid>/status``),
    in MB; None where there is no such file (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


async def _cleanup(bus: object, store: object) -> None:
    for target in (store, bus):
        for method in ("flush_namespace", "delete_namespace"):
            if hasattr(target, method):
                await getattr(target, method)()
        await target.close()  # type: ignore[attr-defined]


def bench_cycle(workload: Workload, nodes: int, init: int, pods: int) -> dict[str, object]:
    run = run_cycle(workload, nodes, init, pods)
    latencies = [seconds * 1000 for seconds in run.latencies]
    report = summary(workload.name, "cycle", (nodes, init, pods), latencies, run.elapsed)
    report["unschedulable"] = run.unschedulable
    return report


def queue_ops_command(pods: int | None) -> int:
    """``ksched bench QueueOps``: the queue core's operations per second, as
    ``services.queue.bench.queue_ops`` measures them, printed as its JSON line."""
    try:  # looked up when run: the queue's benchmark is the queue's to change
        queue_ops = importlib.import_module("services.queue.bench").queue_ops
    except (ImportError, AttributeError) as error:
        print(f"ksched bench: QueueOps is not available: {error}", file=sys.stderr)
        return 2
    report = queue_ops() if pods is None else queue_ops(pods)
    print(json.dumps(report))
    return 0


def bench_command(args: argparse.Namespace) -> int:
    if args.workload == "QueueOps":
        return queue_ops_command(args.pods)
    workload = WORKLOADS[args.workload]
    init, pods = workload.counts(args.nodes, args.init_pods, args.pods)
    if args.mode == "cycle" and workload.churn is not None:
        print(
            f"ksched bench: {workload.name} creates pods while it measures, in real time: "
            "use --mode embedded or --mode services",
            file=sys.stderr,
        )
        return 2
    if args.mode == "cycle":
        report = bench_cycle(workload, args.nodes, init, pods)
    elif args.mode == "embedded":
        report = asyncio.run(bench_embedded(workload, args.nodes, init, pods))
    else:
        settings = from_env(amqp_url=args.amqp_url, redis_url=args.redis_url)
        report = asyncio.run(bench_services(workload, args.nodes, init, pods, settings))
    print(json.dumps(report))
    return 0
