"""Memory and restart of a scheduler replica at scale (issue 14).

    .venv/bin/python ops/bench/restart.py [--nodes 15000] [--pods 150000] [--probe 1000]

Runs the four services as processes against the real RabbitMQ and Redis (a private
namespace, removed afterwards), projects SchedulingBasic's nodes with ``--pods`` pods
bound to them, schedules ``--probe`` more pods, and reads the scheduler's resident
memory (``VmRSS`` and its peak ``VmHWM``). Then the scheduler is killed (SIGKILL, as a
crash) and a new one started: ``restart_ready_s`` is the time until it answers
``/readyz`` (it has loaded every node and pod from Redis and follows the feed);
then ``--probe`` new pods are published: ``restart_first_binding_s`` is the time from
the restart to the first of their Bindings, ``restart_serving_s`` to the last. The
last line is one JSON object; exit 1 when the run failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.config import workload_named
from bench.embedded import Timings, setup_documents
from bench.report import revision
from bench.scrape import BenchFailure, Endpoints, free_ports
from bench.services import cleanup, decisions_queue, peak_rss_mb, tls_env
from contracts import topology
from contracts.k8s import Binding, Decision
from services.cli.manifests import Document
from services.common.bus import Delivery, Message, open_bus
from services.common.settings import from_env
from services.common.store import open_store

SERVICES = ("informer", "queue", "scheduler", "binder")
READY_WITHIN = 600.0


async def run(nodes: int, pods: int, probe: int) -> dict[str, object]:
    settings = from_env()
    workload = workload_named("SchedulingBasic")
    namespace = f"restart{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="ksched-restart-"))
    flags = ["--amqp-url", settings.amqp_url, "--redis-url", settings.redis_url]
    flags += ["--namespace", namespace]
    bus = open_bus(
        settings.amqp_url,
        namespace=namespace,
        tls=settings.tls,
        quorum=settings.quorum_queues,
    )
    store = open_store(settings.redis_url, namespace=namespace, tls=settings.tls)
    ports = dict(zip(SERVICES, free_ports(len(SERVICES)), strict=True))
    env = {**os.environ, **tls_env(settings), "KSCHED_EVENT_LOG": str(workdir / "events.jsonl")}
    children: dict[str, asyncio.subprocess.Process] = {}
    rounds: list[Timings] = []
    watch = decisions_queue(f"ksched.restart.{namespace}", "binding.*")

    async def on_decisions(deliveries: Sequence[Delivery]) -> None:
        now = time.time()
        for delivery in deliveries:
            decision = msgspec.json.decode(delivery.body, type=Decision)
            if isinstance(decision, Binding) and rounds:
                meta = decision.metadata
                rounds[-1].decision(f"{meta.namespace}/{meta.name}", now)

    async def publish(chunk: Sequence[Document]) -> None:
        await bus.publish([Message(topology.EVENTS.name, d.routing_key, d.body) for d in chunk])

    async def spawn(name: str) -> None:
        argv = [sys.executable, "-m", "services.cli.main", "run", name, *flags]
        argv += ["--metrics-port", str(ports[name])]
        children[name] = await asyncio.create_subprocess_exec(*argv, env=env)

    async def schedule(first: int) -> float:
        """Publish ``probe`` measured pods (from index ``first``), wait for their Bindings."""
        timings = Timings(probe)
        rounds.append(timings)
        shifted = _Shifted(workload, first)
        started = await timings.publish(publish, shifted, probe)  # type: ignore[arg-type]
        async with asyncio.timeout(READY_WITHIN):
            await timings.done.wait()
        return max(timings.decided.values()) - started

    def alive(name: str) -> int | None:
        return children[name].returncode

    report: dict[str, object] = {"nodes": nodes, "pods": pods, "probe": probe}
    try:
        await bus.declare(list(topology.QUEUES))
        await bus.consume_raw(watch, on_decisions, max_batch=1024)
        for name in SERVICES:
            await spawn(name)
        setup = setup_documents(workload, nodes, pods, 0)
        began = time.time()
        for start in range(0, len(setup), 1000):
            await publish(setup[start : start + 1000])
        while await store.applied_seq() < len(setup):  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        report["setup_projected_s"] = round(time.time() - began, 1)
        await Endpoints(ports).ready(alive, within=READY_WITHIN)
        report["first_probe_s"] = round(await schedule(0), 2)
        pid = children["scheduler"].pid
        report["scheduler_rss_mb"] = peak_rss_mb(pid, "VmRSS")
        report["scheduler_peak_rss_mb"] = peak_rss_mb(pid)

        children["scheduler"].send_signal(signal.SIGKILL)
        await children["scheduler"].wait()
        restarted = time.time()
        await spawn("scheduler")
        await Endpoints({"scheduler": ports["scheduler"]}).ready(alive, within=READY_WITHIN)
        report["restart_ready_s"] = round(time.time() - restarted, 2)
        await schedule(probe)
        report["restart_first_binding_s"] = round(min(rounds[-1].decided.values()) - restarted, 2)
        report["restart_serving_s"] = round(max(rounds[-1].decided.values()) - restarted, 2)
        pid = children["scheduler"].pid
        report["restarted_rss_mb"] = peak_rss_mb(pid, "VmRSS")
        report["restarted_peak_rss_mb"] = peak_rss_mb(pid)
        report["peak_rss_mb"] = {name: peak_rss_mb(c.pid) for name, c in children.items()}
    finally:
        for child in children.values():
            if child.returncode is None:
                child.terminate()
        for child in children.values():
            await child.wait()
        await cleanup(bus, store)
    report["revision"] = revision()
    return report


class _Shifted:
    """The workload's measured pods from index ``first`` on (a second round of new pods)."""

    def __init__(self, workload: object, first: int) -> None:
        self._workload, self._first = workload, first

    def measured(self, i: int) -> dict[str, object]:
        return self._workload.measured(i + self._first)  # type: ignore[attr-defined, no-any-return]

    def measured_key(self, i: int) -> str:
        return self._workload.measured_key(i + self._first)  # type: ignore[attr-defined, no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=15000)
    parser.add_argument("--pods", type=int, default=150000, help="pods bound before the probe")
    parser.add_argument("--probe", type=int, default=1000, help="pods scheduled per round")
    args = parser.parse_args(argv)
    for flag in ("nodes", "pods", "probe"):
        if getattr(args, flag) < (1 if flag != "pods" else 0):
            parser.error(f"--{flag}: must be a positive number")
    try:
        report = asyncio.run(run(args.nodes, args.pods, args.probe))
    except (BenchFailure, TimeoutError) as err:
        print(f"restart: {err or 'timed out'}", file=sys.stderr)
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
