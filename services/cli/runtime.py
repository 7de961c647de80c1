"""Running one service as a process (``ksched run NAME``; ``ksched up`` runs one such
process per service, see services.cli.up), and the bus clients ``ksched publish`` and
``ksched watch``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Protocol, cast

import msgspec
from prometheus_client import CollectorRegistry

from contracts import topology
from services.binder.service import BinderService
from services.cli.backoff import Backoff
from services.cli.errors import INTERRUPTED, LEADERSHIP_LOST, OK, InputError
from services.cli.eventlogs import open_log
from services.cli.manifests import check, read_documents
from services.cli.output import render_object
from services.cli.serviceflags import SERVICES
from services.cli.shutdown import Shutdown
from services.common import telemetry
from services.common.bus import Bus, Delivery, Message, open_bus
from services.common.clock import SystemClock
from services.common.eventlog import LogFencedError
from services.common.leaderelection import ROLES, DeposingStore, LeaderElector
from services.common.observe import (
    EdgeMetrics,
    Health,
    MeteredBus,
    MeteredStore,
    ServiceEndpoint,
    Watchdog,
    broker_check,
    process_registry,
    redis_check,
)
from services.common.redact import redact
from services.common.settings import Settings
from services.common.store import ClusterStore, Deposed, Fence, open_settings_store
from services.descheduler.policy import load_policy
from services.descheduler.profile import check_node_fit_profiles
from services.descheduler.registry import in_tree_registry as descheduler_registry
from services.descheduler.service import DeschedulerService
from services.framework.api.preemption import Preempting
from services.framework.config import Profile, SchedulerConfig, default_profile, load_config
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.informer.service import InformerService
from services.informer.snapshots import SnapshotPolicy
from services.queue.profiles import QueueProfile
from services.queue.service import QueueService
from services.scheduler.service import SchedulerService

log = logging.getLogger("ksched")


class Service(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def edges(settings: Settings) -> tuple[Bus, ClusterStore]:
    bus = open_bus(
        settings.amqp_url,
        namespace=settings.namespace,
        tls=settings.tls,
        quorum=settings.quorum_queues,
    )
    store = open_settings_store(settings)
    return bus, store


def build(
    name: str,
    settings: Settings,
    bus: Bus,
    store: ClusterStore,
    elector: LeaderElector | None = None,
) -> Service:
    """Service ``name``; ``elector``: the lease it leads, when it elects one."""
    clock = SystemClock()
    if name == "informer":
        informer = settings.informer
        snapshots = SnapshotPolicy(
            every=informer.snapshot_every,
            interval=informer.snapshot_interval,
            retention=informer.log_retention,
        )
        event_log = open_log(informer.event_log, settings)
        confirm = elector.confirm if elector is not None else None
        return InformerService(
            bus,
            store,
            event_log,
            clock,
            snapshots=snapshots,
            confirm=confirm,
            batch_wait=informer.batch_wait,
        )
    if name == "queue":
        config = scheduler_config(settings.config)
        preempting = Preempting()
        return QueueService(
            bus,
            store,
            clock,
            profiles=[
                QueueProfile.of(
                    Framework(p, in_tree_registry(), now=clock.now, preempting=preempting)
                )
                for p in config.profiles
            ],
            preempting=preempting,
            settings=msgspec.structs.replace(
                settings.queue,
                initial_backoff=config.pod_initial_backoff_seconds,
                max_backoff=config.pod_max_backoff_seconds,
            ),
        )
    if name == "scheduler":
        group = settings.scheduler
        if not group.replica:
            group = msgspec.structs.replace(group, replica=f"{socket.gethostname()}-{os.getpid()}")
        return SchedulerService(
            bus,
            store,
            clock,
            load_profiles(settings.config),
            settings=group,
        )
    if name == "binder":
        return BinderService(
            bus,
            store,
            clock,
            load_profiles(settings.config),
            scheduled_events=settings.binder.scheduled_events,
        )
    if name == "descheduler":
        options = settings.descheduler
        if options.policy is None:
            raise InputError("the descheduler needs a policy: --policy POLICY.yaml")
        registry = descheduler_registry()
        policy = load_policy(options.policy, registry)
        profiles = load_profiles(settings.config)
        check_node_fit_profiles(policy, [p.scheduler_name for p in profiles])
        return DeschedulerService(
            bus,
            store,
            clock,
            policy,
            registry,
            options,
            profiles=profiles,
        )
    raise ValueError(f"unknown service {name!r} (one of {', '.join(SERVICES)})")


def load_profiles(path: str | None) -> Sequence[Profile]:
    return scheduler_config(path).profiles


def scheduler_config(path: str | None) -> SchedulerConfig:
    """The KubeSchedulerConfiguration at ``path`` (upstream's defaults when None)."""
    return load_config(path) if path is not None else SchedulerConfig((default_profile(),))


STARTUP_PATIENCE = 30.0
"""Seconds a starting service keeps retrying an unreachable broker or Redis (with
backoff, logging each attempt) before it gives up with the last error; a broker that
boots alongside ksched (compose) has this long."""
STEP_BOUND = 3.0
"""Seconds each step of stopping (the service, the bus, the store) may take."""


async def run_service(name: str, settings: Settings) -> int:
    """Run one service until SIGTERM or SIGINT, then stop it within the bound (see
    services.cli.shutdown), whatever it was doing: starting, connecting, standing by,
    mid-batch. A single-writer role (:data:`~services.common.leaderelection.ROLES`) with
    ``--leader-elect`` starts only once it leads its lease (services.common.leaderelection)
    and every store write it makes carries the lease's fencing token; it stops when it
    loses the lease. The exit code: 130 when SIGINT (Ctrl-C) stopped it, 1 when it lost
    its lease (``leaderelection lost``), else 0."""
    telemetry.configure(name)
    shutdown = Shutdown(f"ksched run {name}")
    shutdown.install()
    raw_bus, raw_store = edges(settings)
    edge_metrics = EdgeMetrics()
    bus = MeteredBus(raw_bus, edge_metrics)
    store = cast(ClusterStore, MeteredStore(raw_store, edge_metrics))
    election = Election.of(name, settings, store) if name in ROLES else None
    if election is not None:
        store = election.store
    # The informer opens its event log only once it leads: a standby must not touch
    # the file its leader appends to.
    service = (
        None if election is not None and name == "informer" else build(name, settings, bus, store)
    )
    health = Health(name)
    watchdog = Watchdog(
        health,
        {"broker": broker_check(raw_bus), "redis": redis_check(raw_store)},
        edge_metrics,
    )
    endpoint = None
    if settings.metrics_port is not None:
        registries = [edge_metrics.registry, process_registry()]
        if election is not None:
            registries.append(election.elector.registry)
        try:
            endpoint = ServiceEndpoint(health, registries, settings.metrics_port)
        except OSError as error:
            raise InputError(
                f"--metrics-port {settings.metrics_port}: cannot listen: {error.strerror or error}"
            ) from None
        log.info("%s serves /metrics, /healthz, /livez, /readyz on port %d", name, endpoint.port)

    def serve(built: Service) -> None:
        """``built``'s metrics and measurements join the process's."""
        own = service_registry(built)
        if endpoint is not None and own is not None:
            endpoint.add(own)
        if (observe := getattr(built, "observe", None)) is not None:
            watchdog.observers.append(observe)

    if service is not None:
        serve(service)
    watchdog.start()
    log.info("%s starting", name)
    lost = False
    try:
        await _unless_stopped(shutdown, _reach(name, bus, store))
        if not shutdown.requested.is_set() and election is not None:
            led = await _unless_stopped(shutdown, election.lead())
            if led and not election.elector.leading:
                log.info(
                    "another %s holds the lease %s (%s): this one-shot run does nothing",
                    name,
                    name,
                    election.elector.leader,
                )
                return OK
            if led and service is None:
                service = build(name, settings, bus, store, election.elector)
                serve(service)
            if led and (leadership := getattr(service, "leadership", None)) is not None:
                await leadership.claim(election.elector.token)  # the log's writer from now
        if (
            service is not None
            and not shutdown.requested.is_set()
            and await _unless_stopped(shutdown, service.start())
        ):
            health.started = True
            await watchdog.check_once()  # ready at once, not at the next period
            log.info("%s started", name)
            lost = await _until_stopped_or_finished(shutdown, service, election)
    except (Deposed, LogFencedError) as error:  # deposed while it started
        log.error("leaderelection lost: %s", error)
        lost = True
    finally:
        shutdown.arm()  # however the run ended, the process ends within the bound
        health.started = False
        await watchdog.stop()  # no check runs against the edges while they close
        await _stop(name, service, bus, store, election)
        if endpoint is not None:
            endpoint.close()
    if lost:
        return LEADERSHIP_LOST
    return INTERRUPTED if shutdown.stopped_by == signal.SIGINT else OK


def service_registry(service: Service) -> CollectorRegistry | None:
    """The service's own Prometheus registry (``registry``, or ``metrics.registry``)."""
    for found in (
        getattr(service, "registry", None),
        getattr(getattr(service, "metrics", None), "registry", None),
    ):
        if isinstance(found, CollectorRegistry):
            return found
    return None


class Election:
    """The leader election of one single-writer role's process: its elector, and the
    store its service writes with (fenced with the token once it leads; a write the
    store refuses for the token deposes it at once)."""

    def __init__(self, name: str, settings: Settings, store: ClusterStore) -> None:
        self.elector = LeaderElector(
            store,
            SystemClock(),
            name,
            settings.leader_election,
            on_started_leading=self._started,
            on_stopped_leading=lambda: None,
        )
        self.store = cast(ClusterStore, DeposingStore(store, self.elector))
        self.once = name == "descheduler" and settings.descheduler.interval <= 0
        """A one-shot run (the descheduler with interval 0): one try, no standing by."""
        self._leading = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @classmethod
    def of(cls, name: str, settings: Settings, store: ClusterStore) -> Election | None:
        """The election of service ``name``; None with ``--leader-elect=false``."""
        return cls(name, settings, store) if settings.leader_election.leader_elect else None

    def _started(self, token: int) -> None:
        self.store.fence(Fence(self.elector.name, token))
        self._leading.set()

    async def lead(self) -> None:
        """Return once this process leads (or, ``once``, after one try that failed)."""
        self.task = asyncio.create_task(
            self.elector.run(once=self.once), name=f"leader-election-{self.elector.name}"
        )
        leading = asyncio.create_task(self._leading.wait(), name="leading")
        try:
            await asyncio.wait([self.task, leading], return_when=asyncio.FIRST_COMPLETED)
        finally:
            leading.cancel()
        if self.task.done():
            self.task.result()  # its failure, if it failed before leading

    async def stop(self) -> None:
        """Stop renewing, then give the lease up (after the service stopped)."""
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        await self.elector.release()


async def _until_stopped_or_finished(
    shutdown: Shutdown, service: Service, election: Election | None = None
) -> bool:
    """Until SIGTERM/SIGINT, until a service with nothing left to do (the
    descheduler with interval 0) says it has finished, or until the process lost its
    lease; True in that last case (logged as upstream's ``leaderelection lost``)."""
    finished: asyncio.Event | None = getattr(service, "finished", None)
    deposed: asyncio.Event | None = getattr(service, "deposed", None)
    waits = [asyncio.create_task(shutdown.requested.wait(), name="stop-requested")]
    if finished is not None:
        waits.append(asyncio.create_task(finished.wait(), name="finished"))
    if deposed is not None:
        waits.append(asyncio.create_task(deposed.wait(), name="deposed"))
    renewing = election.task if election is not None else None
    try:
        await asyncio.wait(
            [*waits, *([renewing] if renewing is not None else [])],
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        for task in waits:
            task.cancel()
    if shutdown.requested.is_set():
        return False
    if deposed is not None and deposed.is_set():
        log.error("leaderelection lost: a write was refused for this leader's fencing token")
        return True
    if renewing is not None and renewing.done():
        assert election is not None
        error = renewing.exception() if not renewing.cancelled() else None
        log.error(
            "leaderelection lost: %s",
            election.elector.reason or (f"renewing failed: {error}" if error else "stopped"),
        )
        return True
    return False


async def _unless_stopped(shutdown: Shutdown, start: Coroutine[None, None, None]) -> bool:
    """Run ``start`` unless a signal comes first: then cancel it and return False."""
    task = asyncio.create_task(start, name="start")
    stopped = asyncio.create_task(shutdown.requested.wait(), name="stop-requested")
    try:
        await asyncio.wait([task, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=STEP_BOUND)
    if task.cancelled() or not task.done():
        return False
    task.result()  # start's own failure
    return True


async def _reach(name: str, bus: Bus, store: ClusterStore) -> None:
    """Reach the broker and Redis, retrying with backoff for STARTUP_PATIENCE."""
    clock = SystemClock()
    backoff = Backoff(clock)
    give_up = clock.now() + STARTUP_PATIENCE
    while True:
        try:
            await bus.declare(())
            await store.applied_seq()
            return
        except Exception as error:
            delay = backoff.failed()
            if clock.now() + delay > give_up:
                raise
            log.warning(
                "%s: cannot reach the broker or Redis: %s; retrying in %g s",
                name,
                redact(str(error) or type(error).__name__),
                delay,
            )
            await clock.sleep(delay)


async def _stop(
    name: str,
    service: Service | None,
    bus: Bus,
    store: ClusterStore,
    election: Election | None = None,
) -> None:
    """Stop the service, give its lease up, then close the bus and the store: each step
    bounded, each done even if the one before failed (an unclosed robust connection
    keeps a task alive)."""
    steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        *([("stop the service", service.stop)] if service is not None else []),
        *([("give the lease up", election.stop)] if election is not None else []),
        ("close the bus", bus.close),
        ("close the store", store.close),
    ]
    for what, step in steps:
        try:
            async with asyncio.timeout(STEP_BOUND):
                await step()
        except Exception:
            log.warning("%s: could not %s within %g s", name, what, STEP_BOUND, exc_info=True)
    log.info("%s stopped", name)


async def publish(
    settings: Settings, text: str, *, delete: bool, source: str, validate: bool = True
) -> int:
    """Publish every object in ``text`` as a watch event. With ``validate``, each is
    first checked as the informer will check it (services.cli.manifests.check): the
    first it would refuse is a ManifestError naming the document and the field, and
    nothing is published. Checks that need the cluster's state (a pod bound to an
    unknown node) remain the informer's, reported on ``ksched.errors``."""
    documents = read_documents(text, event_type="DELETED" if delete else "ADDED", source=source)
    if validate:
        for document in documents:
            check(document, source=source)
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
    an explanation (annotation ``ksched.io/explain``) is followed by it as tables.
    Until ``limit`` messages (exit 0), SIGTERM (0) or SIGINT (130, Ctrl-C)."""
    bindings = [topology.QueueBinding(topology.DECISIONS.name, "#")]
    if errors:
        bindings.append(topology.QueueBinding(topology.ERRORS.name, "#"))
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

    stopped_by: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        stopped_by.append(sig)
        done.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    await bus.declare(topology.QUEUES)
    await bus.consume_raw(spec, show)
    print(
        "watching ksched.decisions" + (" and ksched.errors" if errors else ""),
        file=sys.stderr,
        flush=True,
    )
    try:
        await done.wait()
    finally:
        await bus.close()
    return INTERRUPTED if stopped_by[:1] == [signal.SIGINT] else OK


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
