"""``ksched bench --mode services``: each service as its own process against the real
RabbitMQ and Redis (under a private namespace, removed afterwards), talked to over the
bus only; latency is from publish to Binding.

Each process serves its metrics on a free port of its own (``--metrics-port``). The
measurement starts once the setup is projected and every service answers ``/readyz``;
the messages published to the broker during it are the growth of every process's
``ksched_messages_published_total`` (read when the processes are quiet, before and
after: bench.scrape) plus the bench client's own publishes. ``replicas``: that many
scheduler processes, ``--replica sched-<i>``; their ``ksched_store_assume_conflicts_total``
and ``ksched_store_domain_conflicts_total`` are read just before they are stopped.
Before that, the final state the store holds is judged (:func:`final_violations`):
``violations`` counts the broken hard constraints, each printed on stderr; 0 is the only
passing answer.

SIGTERM stops a run as it stops a service: the processes are stopped, the namespace is
removed, and the command ends with exit 143 and one line (:class:`SigtermStop`); a
second SIGTERM ends it at once. Its namespace is named on stderr when the run starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from bench import cpu
from bench.churn import ChurnOp
from bench.embedded import Timings, document, measure, setup_documents, with_churn
from bench.passthrough import QUEUE as PASSTHROUGH_QUEUE
from bench.report import summary
from bench.scrape import (
    ASSUME_CONFLICTS,
    CONSUMED,
    CYCLE_CPU,
    DOMAIN_CONFLICTS,
    PUBLISHED,
    Counters,
    Endpoints,
    delta,
    free_ports,
    total,
)
from bench.workload import Workload
from contracts import topology
from contracts.k8s import Binding, Decision
from contracts.preemption import PodRef, Preemption
from services.cli.errors import Terminated
from services.cli.manifests import Document
from services.cli.serviceflags import argv_for
from services.common.bus import Delivery, Message, open_bus
from services.common.eventlog.options import stream_name
from services.common.settings import ENV, Settings
from services.common.store import ClusterStore, open_store, server_info
from services.framework.config.load import load_config
from services.framework.verify import Violation, store_violations

SERVICES = ("informer", "queue", "scheduler", "binder")
READY_WITHIN = 300.0
"""Seconds the services may take to be ready once the setup is projected (a scheduler
loads every node and pod of the setup)."""


def processes(replicas: int) -> list[tuple[str, list[str]]]:
    """The service processes of a run, by name, with the flags only that process gets:
    ``replicas`` schedulers, ``--replica sched-<i>`` (named ``scheduler`` when there is
    one, ``scheduler-sched-<i>`` when there are more)."""
    out: list[tuple[str, list[str]]] = []
    for service in SERVICES:
        if service != "scheduler":
            out.append((service, [service]))
            continue
        for i in range(replicas):
            name = "scheduler" if replicas == 1 else f"scheduler-sched-{i}"
            out.append((name, [service, "--replica", f"sched-{i}"]))
    return out


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
    replicas: int = 1,
) -> dict[str, object]:
    """``passthrough``: the Passthrough service (bench.passthrough) instead of ksched's
    four, with the same client, documents and broker; ``rate``: publish the measured
    pods open-loop at this many per second; ``replicas``: scheduler processes."""
    namespace = f"bench{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="ksched-bench-"))
    flags = ["--amqp-url", settings.amqp_url, "--redis-url", settings.redis_url]
    flags += ["--namespace", namespace]
    if not settings.binder.scheduled_events:
        flags.append("--no-scheduled-events")
    if workload.scheduler_config is not None:
        flags += ["--config", str(workload.scheduler_config)]
    command = [sys.executable, "-m", "services.cli.main", "run"]
    bus = open_bus(
        settings.amqp_url,
        namespace=namespace,
        tls=settings.tls,
        quorum=settings.quorum_queues,
    )
    store = open_store(
        settings.redis_url, namespace=namespace, tls=settings.tls, failover=settings.failover
    )
    timings = Timings(pods)
    watch = decisions_queue(f"ksched.bench.{namespace}", "binding.*", "preemption.*", "claim.*")

    async def on_decisions(deliveries: Sequence[Delivery]) -> None:
        now = time.time()
        victims: list[Document] = []
        for delivery in deliveries:
            if delivery.routing_key.startswith("claim."):
                # As a client applying the claim's status update (DRA's PreBind).
                victims.append(applied_claim(delivery.body))
                continue
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

    client_published = 0

    async def publish(chunk: Sequence[Document]) -> None:
        nonlocal client_published
        await bus.publish([Message(topology.EVENTS.name, d.routing_key, d.body) for d in chunk])
        client_published += len(chunk)

    churn = ChurnOp(workload.churn, publish) if workload.churn else None
    children: dict[str, asyncio.subprocess.Process] = {}
    peaks: dict[str, float | None] = {}
    warm = asyncio.Event()
    plan = [("passthrough", [])] if passthrough else processes(replicas)
    endpoints = Endpoints(dict(zip((n for n, _ in plan), free_ports(len(plan)), strict=True)))
    stop = SigtermStop()
    print(f"ksched bench: services under namespace {namespace}", file=sys.stderr, flush=True)
    try:
        await bus.declare([*topology.QUEUES, *([PASSTHROUGH_QUEUE] if passthrough else [])])
        await bus.consume_raw(watch, on_decisions, max_batch=1024)
        env = {**os.environ, **tls_env(settings), "KSCHED_EVENT_LOG": event_log(workdir)}
        if workload.feature_gates:
            env["KSCHED_FEATURE_GATES"] = workload.feature_gates
        for name, own in plan:
            port = ["--metrics-port", str(endpoints.ports[name])]
            if passthrough:
                argv = [sys.executable, "-m", "bench.passthrough", *flags[:2]]
                argv += ["--namespace", namespace, *port]
            else:
                argv = [*command, own[0], *argv_for(own[0], [*own[1:], *flags]), *port]
            children[name] = await asyncio.create_subprocess_exec(*argv, env=env)
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
            await endpoints.ready(lambda n: children[n].returncode, within=READY_WITHIN)
        before = await endpoints.settled()
        pids = {name: child.pid for name, child in children.items()}
        probe = await cpu.probe_for(pids, settings.amqp_url, redis_info(settings))
        baseline = await probe.baseline()
        client_before, cpu_start = client_published, probe.sample()
        started = await measure(timings, publish, workload, pods, churn, rate)
        after = await endpoints.settled()
        cpu_end = probe.sample()
        client_sent = client_published - client_before
        if not passthrough:
            found = await final_violations(store, workload)
        peaks = {name: peak_rss_mb(c.pid) for name, c in children.items()}
    except asyncio.CancelledError:
        if not stop.received:
            raise
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # handled: the clean-up below runs as after any other end
        raise stop.stopped(namespace) from None
    finally:
        stop.cleaning = True
        for child in children.values():
            if child.returncode is None:
                child.terminate()
        for child in children.values():
            await child.wait()
        await cleanup(bus, store, log_streams(event_log(workdir)))
        stop.close()
    stop.end_if_received(namespace)
    # After the children are reaped, so that their peak memory counts in max_rss_mb.
    elapsed = max(timings.decided.values()) - started
    counts = (workload.total_nodes(nodes), init, len(timings.decided))
    mode = "passthrough" if passthrough else "services"
    report = summary(workload.name, mode, counts, timings.latencies_ms(), elapsed)
    if rate is not None:
        report["rate"] = rate
    report.update(broker_figures(before, after, client_sent, len(timings.decided)))
    per_pod, missing = cpu.per_pod_ms(baseline, (cpu_start, cpu_end), len(timings.decided))
    cycle_ms = None
    if not passthrough and timings.decided:
        cycle_ms = delta(before, after, CYCLE_CPU) * 1000 / len(timings.decided)
    roles = () if passthrough else cpu.SINGLE_INSTANCE
    report.update(cpu.figures(per_pod, {**probe.absent, **missing}, cycle_ms, roles))
    if not passthrough:
        report["replicas"] = replicas
        report["assume_conflicts"] = int(total(after, ASSUME_CONFLICTS))
        report["domain_conflicts"] = int(total(after, DOMAIN_CONFLICTS))
        report["violations"] = len(found)
        for violation in found[:SHOWN_VIOLATIONS]:
            print(f"violation: {violation}", file=sys.stderr)
        print(
            f"violations: {len(found)} (the final state, services.framework.verify)",
            file=sys.stderr,
        )
    peaks["bench"] = peak_rss_mb(os.getpid())
    report["peak_rss_mb"] = peaks
    if not settings.binder.scheduled_events and not passthrough:
        report["scheduled_events"] = False
    for name, peak in peaks.items():
        shown = "unknown (no /proc)" if peak is None else f"{peak:.1f} MB"
        print(f"{name}: peak RSS {shown}", file=sys.stderr)
    for line in cpu.table(report):
        print(line, file=sys.stderr)
    return with_churn(report, churn)


SHOWN_VIOLATIONS = 20
"""Violations printed one per line on stderr (all are counted in the report)."""


async def final_violations(store: ClusterStore, workload: Workload) -> list[Violation]:
    """Every hard constraint broken in the final state: once no reservation is left
    (every Binding is in the store's projection), the bound pods judged by the
    workload's profiles (services.framework.verify)."""
    async with asyncio.timeout(READY_WITHIN):
        while await store.assumed():  # noqa: ASYNC110 (a Redis state, not an event)
            await asyncio.sleep(0.05)
    config = workload.scheduler_config
    profiles = None if config is None else load_config(config).profiles
    return await store_violations(store, profiles)


class SigtermStop:
    """While a run is measuring, SIGTERM cancels it, so that its ``finally`` stops the
    processes and removes the namespace (the default action would end the command at
    once and leave both behind); once that clean-up has begun it is left to finish, and
    then the run ends as stopped all the same (:meth:`end_if_received`), rather than
    reporting and going on (to a ``--vs-passthrough`` run, say). The handler removes
    itself: a second SIGTERM ends the command at once."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self.received = False
        self.cleaning = False
        self._loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self) -> None:
        self._loop.remove_signal_handler(signal.SIGTERM)
        self.received = True
        if not self.cleaning and self._task is not None:
            self._task.cancel()

    def close(self) -> None:
        with contextlib.suppress(ValueError, RuntimeError):
            self._loop.remove_signal_handler(signal.SIGTERM)

    @staticmethod
    def stopped(namespace: str) -> Terminated:
        return Terminated(
            f"stopped by SIGTERM before its report: its processes were stopped and "
            f"namespace {namespace} removed"
        )

    def end_if_received(self, namespace: str) -> None:
        """After the clean-up: Terminated if SIGTERM came while it ran."""
        if self.received:
            raise self.stopped(namespace)


def broker_figures(before: Counters, after: Counters, client: int, pods: int) -> dict[str, object]:
    """``messages_published`` to the broker during the measurement (by every process
    and the bench client), ``messages_per_pod`` over the measured pods done,
    ``messages_by_process`` (the same by publisher; ``bench`` is the client) and
    ``deliveries_per_pod``: messages the processes consumed, per pod."""
    by_process = {
        name: int(after[name].get(PUBLISHED, 0.0) - before.get(name, {}).get(PUBLISHED, 0.0))
        for name in after
    }
    by_process["bench"] = client
    published = sum(by_process.values())
    consumed = int(delta(before, after, CONSUMED))
    return {
        "messages_published": published,
        "messages_per_pod": round(published / pods, 2) if pods else None,
        "messages_by_process": by_process,
        "deliveries_per_pod": round(consumed / pods, 2) if pods else None,
    }


def applied_claim(body: bytes) -> Document:
    """The MODIFIED watch event that applies a ``claim.<namespace>`` decision."""
    event = b'{"type":"MODIFIED","object":' + body + b"}"
    return Document(0, "resourceclaim", event, topology.event_key("resourceclaim", "MODIFIED"))


def deleted(victim: PodRef) -> Document:
    """The DELETED watch event of a preemption's victim."""
    meta = {"name": victim.name, "namespace": victim.namespace, "uid": victim.uid}
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
    body = msgspec.json.encode({"type": "DELETED", "object": obj})
    return Document(0, "pod", body, topology.event_key("pod", "DELETED"))


def redis_info(settings: Settings) -> cpu.Info | None:
    """Redis's ``INFO server``, asked on a connection of its own (the store edge's
    client), to find its process (bench.cpu); None for a ``memory://`` store."""
    if settings.redis_url.startswith("memory://"):
        return None

    async def info() -> Mapping[str, object]:
        return await server_info(settings.redis_url, tls=settings.tls, failover=settings.failover)

    return info


def tls_env(settings: Settings) -> dict[str, str]:
    """The ``KSCHED_TLS_*`` variables for ``settings``' TLS files, so the service
    processes use the same files as the bench's own bus and store."""
    files = {"tls_ca": settings.tls_ca, "tls_cert": settings.tls_cert, "tls_key": settings.tls_key}
    return {ENV[name]: path for name, path in files.items() if path is not None}


def peak_rss_mb(pid: int, field: str = "VmHWM") -> float | None:
    """The peak resident memory of process ``pid`` (``VmHWM`` in ``/proc/<pid>/status``;
    ``field="VmRSS"``: the current one), in MB; None where there is no such file (not
    Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def decisions_queue(name: str, *keys: str) -> topology.QueueSpec:
    """A private queue of the bench client on ``ksched.decisions``, bound to ``keys``."""
    return topology.QueueSpec(
        name,
        tuple(topology.QueueBinding(topology.DECISIONS.name, key) for key in keys),
        durable=False,
        exclusive=True,
        auto_delete=True,
        dead_letter=False,
    )


async def cleanup(bus: object, store: object, streams: Sequence[str] = ()) -> None:
    """Remove the run's namespace from the store and the broker (with ``streams``, the
    event log's when it is on a stream), and close both."""
    if hasattr(store, "flush_namespace"):
        await store.flush_namespace()
    await store.close()  # type: ignore[attr-defined]
    if hasattr(bus, "delete_namespace"):
        await bus.delete_namespace(streams)
    await bus.close()  # type: ignore[attr-defined]


def log_streams(spec: str) -> list[str]:
    """The streams a ``stream://`` event log keeps (itself, its claims, its snapshots),
    without the namespace; none for a file log."""
    if not spec.startswith("stream://"):
        return []
    name = stream_name(spec)
    return [name, f"{name}.fences", f"{name}.snapshots"]


def event_log(workdir: Path) -> str:
    """The informer's log: a stream when ``KSCHED_EVENT_LOG`` names one (the HA shape,
    measured against its RabbitMQ cluster), else a fresh file in the run's directory."""
    configured = os.environ.get("KSCHED_EVENT_LOG", "")
    return configured if configured.startswith("stream://") else str(workdir / "events.jsonl")
