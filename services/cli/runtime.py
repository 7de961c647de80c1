"""Running the services as processes: ``ksched run NAME``, ``ksched up``, and the bus
clients ``ksched publish`` and ``ksched watch``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Protocol

from contracts import topology
from services.binder.service import BinderService
from services.cli.manifests import read_documents
from services.cli.output import render_object
from services.common import telemetry
from services.common.bus import Bus, Delivery, Message, open_bus
from services.common.clock import SystemClock
from services.common.eventlog import open_event_log
from services.common.settings import Settings
from services.common.store import ClusterStore, open_store
from services.framework.config import Profile, SchedulerConfig, default_profile, load_config
from services.framework.runtime import Framework
from services.informer.service import InformerService
from services.queue.profiles import QueueProfile
from services.queue.service import QueueService
from services.scheduler.service import SchedulerService

SERVICES = ("informer", "queue", "scheduler", "binder")
log = logging.getLogger("ksched")


class Service(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def edges(settings: Settings) -> tuple[Bus, ClusterStore]:
    bus = open_bus(settings.amqp_url, namespace=settings.namespace, tls=settings.tls)
    store = open_store(settings.redis_url, namespace=settings.store_namespace, tls=settings.tls)
    return bus, store


def build(name: str, settings: Settings, bus: Bus, store: ClusterStore) -> Service:
    clock = SystemClock()
    if name == "informer":
        return InformerService(bus, store, open_event_log(settings.event_log), clock)
    if name == "queue":
        config = scheduler_config(settings.config)
        return QueueService(
            bus,
            store,
            clock,
            profiles=[QueueProfile.of(Framework(p)) for p in config.profiles],
            max_in_flight=settings.max_in_flight,
            batch_size=settings.dispatch_batch,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            metrics_port=settings.metrics_port,
        )
    if name == "scheduler":
        replica = settings.replica or f"{socket.gethostname()}-{os.getpid()}"
        return SchedulerService(
            bus,
            store,
            clock,
            load_profiles(settings.config),
            replica=replica,
            seed=settings.seed,
            assume_ttl=settings.assume_ttl,
            explain=settings.explain,
        )
    if name == "binder":
        return BinderService(bus, store, clock)
    raise ValueError(f"unknown service {name!r} (one of {', '.join(SERVICES)})")


def load_profiles(path: str | None) -> Sequence[Profile]:
    return scheduler_config(path).profiles


def scheduler_config(path: str | None) -> SchedulerConfig:
    """The KubeSchedulerConfiguration at ``path`` (upstream's defaults when None)."""
    return load_config(path) if path is not None else SchedulerConfig((default_profile(),))


async def run_service(name: str, settings: Settings) -> None:
    """Run one service until SIGTERM or SIGINT."""
    telemetry.configure(name)
    bus, store = edges(settings)
    service = build(name, settings, bus, store)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await service.start()
    log.info("%s started", name)
    try:
        await stop.wait()
    finally:
        await service.stop()
        await bus.close()
        await store.close()


def up(settings_args: Sequence[str], only: Mapping[str, Sequence[str]] | None = None) -> int:
    """Start every service as its own process; restart one that dies; stop all on a signal.
    ``only[name]`` are flags for that service alone (``--metrics-port`` for the queue)."""
    command = [sys.executable, "-m", "services.cli.main", "run"]
    argv = {n: [*command, n, *settings_args, *(only or {}).get(n, ())] for n in SERVICES}
    children: dict[str, subprocess.Popen[bytes]] = {}
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for name in SERVICES:
        children[name] = subprocess.Popen(argv[name])
    while not stopping:
        for name, child in list(children.items()):
            code = child.poll()
            if code is not None and not stopping:
                log.warning("%s exited with %s; restarting", name, code)
                children[name] = subprocess.Popen(argv[name])
        with contextlib.suppress(subprocess.TimeoutExpired):
            next(iter(children.values())).wait(timeout=0.5)
    for child in children.values():
        child.terminate()
    for child in children.values():
        child.wait()
    return 0


async def publish(settings: Settings, text: str, *, delete: bool, source: str) -> int:
    documents = read_documents(text, event_type="DELETED" if delete else "ADDED", source=source)
    bus, _ = edges(settings)
    try:
        await bus.declare(topology.QUEUES)
        await bus.publish([Message(topology.EVENTS.name, d.routing_key, d.body) for d in documents])
    finally:
        await bus.close()
    print(f"published {len(documents)} events", file=sys.stderr)
    return 0


async def watch(
    settings: Settings,
    *,
    errors: bool,
    limit: int | None,
    explain: bool = False,
    output: str = "json",
) -> int:
    """Print every decision (and, with ``errors``, every error report) as a JSON line
    (``output="yaml"``: a YAML document); with ``explain``, each decision that carries
    an explanation (annotation ``ksched.io/explain``) is followed by it as tables."""
    bindings = [topology.Binding(topology.DECISIONS.name, "#")]
    if errors:
        bindings.append(topology.Binding(topology.ERRORS.name, "#"))
    spec = topology.QueueSpec(
        f"ksched.watch.{uuid.uuid4().hex[:12]}",
        tuple(bindings),
        durable=False,
        exclusive=True,
        auto_delete=True,
        dead_letter=False,
    )
    bus, _ = edges(settings)
    done = asyncio.Event()
    seen = 0

    async def show(deliveries: Sequence[Delivery]) -> None:
        nonlocal seen
        for delivery in deliveries:
            decision = json.loads(delivery.body)
            print(render_object(decision, output), end="", flush=True)
            if explain:
                _print_explanation(decision)
            seen += 1
            if limit is not None and seen >= limit:
                done.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)
    await bus.declare(topology.QUEUES)
    await bus.consume(spec, show)
    print(
        "watching ksched.decisions" + (" and ksched.errors" if errors else ""),
        file=sys.stderr,
        flush=True,
    )
    try:
        await done.wait()
    finally:
        await bus.close()
    return 0


def _print_explanation(decision: object) -> None:
    from services.cli.embedded import explanation_of
    from services.cli.explain_table import render

    if not isinstance(decision, dict):
        return
    annotations = decision.get("metadata", {}).get("annotations", {})
    explanation = explanation_of(annotations)
    if explanation is not None:
        render(explanation, sys.stdout, chosen=decision.get("target", {}).get("name"))
        sys.stdout.flush()
