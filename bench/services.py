"""``ksched bench --mode services``: each service as its own process against the real
RabbitMQ and Redis (under a private namespace, removed afterwards), talked to over the
bus only; latency is from publish to Binding."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.churn import ChurnOp
from bench.embedded import Timings, document, measure, setup_documents, with_churn
from bench.passthrough import QUEUE as PASSTHROUGH_QUEUE
from bench.report import summary
from bench.workload import Workload
from contracts import topology
from contracts.k8s import Binding, Decision
from contracts.preemption import PodRef, Preemption
from services.cli.manifests import Document
from services.common.bus import Delivery, Message, open_bus
from services.common.settings import ENV, Settings
from services.common.store import open_store

SERVICES = ("informer", "queue", "scheduler", "binder")


WARMUP = "passthrough-warmup"
"""The pod Passthrough answers before the measurement starts (it is then consuming)."""


async def bench_services(
    workload: Workload,
    nodes: int,
    init: int,
    pods: int,
    settings: Settings,
    *,
    rate: float | None = None,
    passthrough: bool = False,
) -> dict[str, object]:
    """``passthrough``: the Passthrough service (bench.passthrough) instead of ksched's
    four, with the same client, documents and broker; ``rate``: publish the measured
    pods open-loop at this many per second."""
    namespace = f"bench{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="ksched-bench-"))
    flags = ["--amqp-url", settings.amqp_url, "--redis-url", settings.redis_url]
    flags += ["--namespace", namespace]
    if workload.scheduler_config is not None:
        flags += ["--config", str(workload.scheduler_config)]
    command = [sys.executable, "-m", "services.cli.main", "run"]
    bus = open_bus(settings.amqp_url, namespace=namespace, tls=settings.tls)
    store = open_store(settings.redis_url, namespace=namespace, tls=settings.tls)
    timings = Timings(pods)
    watch = topology.QueueSpec(
        f"ksched.bench.{namespace}",
        (
            topology.QueueBinding(topology.DECISIONS.name, "binding.*"),
            topology.QueueBinding(topology.DECISIONS.name, "preemption.*"),
        ),
        durable=False,
        exclusive=True,
        auto_delete=True,
        dead_letter=False,
    )

    async def on_decisions(deliveries: Sequence[Delivery]) -> None:
        now = time.time()
        victims: list[Document] = []
        for delivery in deliveries:
            if delivery.routing_key.startswith("preemption."):
                # As a client carrying out the preemption: the victims are deleted.
                preemption = msgspec.json.decode(delivery.body, type=Preemption)
                victims += [deleted(v) for v in preemption.victims]
                continue
            decision = msgspec.json.decode(delivery.body, type=Decision)
            if isinstance(decision, Binding):
                meta = decision.metadata
                if meta.name == WARMUP:
                    warm.set()
                timings.decision(f"{meta.namespace}/{meta.name}", now)
        if victims:
            await publish(victims)

    async def publish(chunk: Sequence[Document]) -> None:
        await bus.publish([Message(topology.EVENTS.name, d.routing_key, d.body) for d in chunk])

    churn = ChurnOp(workload.churn, publish) if workload.churn else None
    children: list[asyncio.subprocess.Process] = []
    peaks: dict[str, float | None] = {}
    warm = asyncio.Event()
    names = ("passthrough",) if passthrough else SERVICES
    try:
        await bus.declare([*topology.QUEUES, *([PASSTHROUGH_QUEUE] if passthrough else [])])
        await bus.consume_raw(watch, on_decisions, max_batch=1024)
        env = {**os.environ, **tls_env(settings), "KSCHED_EVENT_LOG": str(workdir / "events.jsonl")}
        if passthrough:
            argv = [sys.executable, "-m", "bench.passthrough", *flags[:2], "--namespace", namespace]
            children.append(await asyncio.create_subprocess_exec(*argv, env=env))
        else:
            for name in SERVICES:
                children.append(
                    await asyncio.create_subprocess_exec(*command, name, *flags, env=env)
                )
        setup = setup_documents(workload, nodes, init, pods)
        for start in range(0, len(setup), 1000):
            await publish(setup[start : start + 1000])
        if passthrough:  # consuming once it answered a pod
            warmup = {"metadata": {"name": WARMUP, "namespace": "bench", "uid": WARMUP},
                      "spec": {"containers": [{"name": "c", "image": "x"}]}}  # fmt: skip
            await publish([document(0, "pod", warmup)])
            async with asyncio.timeout(60):
                await warm.wait()
        else:
            # Poll: the informer has projected the setup once the store has applied it all.
            while await store.applied_seq() < len(setup):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        started = await measure(timings, publish, workload, pods, churn, rate)
        peaks = {name: peak_rss_mb(c.pid) for name, c in zip(names, children, strict=True)}
    finally:
        for child in children:
            child.terminate()
        for child in children:
            await child.wait()
        await _cleanup(bus, store)
    # After the children are reaped, so that their peak memory counts in max_rss_mb.
    elapsed = max(timings.decided.values()) - started
    counts = (nodes, init, len(timings.decided))
    mode = "passthrough" if passthrough else "services"
    report = summary(workload.name, mode, counts, timings.latencies_ms(), elapsed)
    if rate is not None:
        report["rate"] = rate
    report["peak_rss_mb"] = peaks
    for name, peak in peaks.items():
        shown = "unknown (no /proc)" if peak is None else f"{peak:.1f} MB"
        print(f"{name}: peak RSS {shown}", file=sys.stderr)
    return with_churn(report, churn)


def deleted(victim: PodRef) -> Document:
    """The DELETED watch event of a preemption's victim."""
    meta = {"name": victim.name, "namespace": victim.namespace, "uid": victim.uid}
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
    body = msgspec.json.encode({"type": "DELETED", "object": obj})
    return Document(0, "pod", body, topology.event_key("pod", "DELETED"))


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
