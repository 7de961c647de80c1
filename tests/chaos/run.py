"""One chaos run, start to finish, every wait bounded and every process stopped.

1. Start the run's own RabbitMQ and Redis (:mod:`.servers`) and the four services as
   processes (``ksched run NAME``) against them, with an event log in the run's directory.
2. Publish the nodes, then the pods paced over the publishing window, as a client of the
   documented contract (:mod:`.client`), while :class:`~.faults.Chaos` injects the faults.
   A service that exits on its own is started again and counted as a crash.
3. Wait until the client has a Binding for every pod, or the deadline.
4. Wait (bounded) for the store to settle: no reservation, no lease, the log applied.
5. Gather and judge (:mod:`.observe`, :mod:`.checks`), stop everything, print the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import aio_pika
from redis.exceptions import RedisError

from services.common.store.redis import RedisStore
from tests.chaos.checks import Observed, Row, evaluate, verdict
from tests.chaos.client import ChaosClient
from tests.chaos.faults import SERVICES, Chaos
from tests.chaos.observe import observe, read_log
from tests.chaos.servers import PrivateServers, private_servers
from tests.chaos.workload import NAMESPACE, Workload, scheduling_basic
from tests.integration.harness import Processes

SETTLE_TIMEOUT = 60.0
"""Seconds the store may take, once every pod is bound, to drop reservations and leases
and apply the whole log."""
PROGRESS_EVERY = 5.0
CHUNK = 50
"""Pods per publish while pacing."""

log = logging.getLogger("chaos")


@dataclass(frozen=True, slots=True)
class Options:
    pods: int
    nodes: int
    seed: int
    short: bool
    faults: frozenset[str]
    window: float
    """Seconds the pods are published over."""
    deadline: float
    """Seconds, from the first pod published, until every pod must be bound."""
    workdir: Path
    ha: bool = False
    """On the local HA deployment, with the HA faults (tests.chaos.ha)."""


class ChaosProcesses(Processes):
    """The harness's service processes, pointed at the run's own servers."""

    def __init__(self, workdir: Path, servers: PrivateServers) -> None:
        super().__init__(NAMESPACE, workdir, amqp_url=servers.amqp_url, redis_url=servers.redis_url)

    def save_logs(self) -> None:
        for name in SERVICES:
            (self.workdir / f"{name}.log").write_text(self.log(name) + "\n")


async def chaos_run(options: Options) -> int:
    """Run, print the summary; 0 when every invariant held, 1 otherwise."""
    workload = scheduling_basic(options.pods, options.nodes)
    started = time.monotonic()
    async with private_servers(options.workdir) as servers:
        processes = ChaosProcesses(options.workdir, servers)
        chaos = Chaos(
            processes,
            servers,
            random.Random(options.seed),
            options.faults,
            options.short,
            options.window,
        )
        try:
            observed, error, failed = await _run(options, workload, servers, processes, chaos)
        finally:
            with contextlib.suppress(AssertionError):
                await processes.stop_all()
            processes.save_logs()
    rows = evaluate(observed)
    if error is not None:
        rows.append(Row("run completed", "no", False, error))
    facts = _facts(options, chaos, observed, failed, time.monotonic() - started)
    return verdict(chaos.timeline, rows, facts)


async def _run(
    options: Options,
    workload: Workload,
    servers: PrivateServers,
    processes: ChaosProcesses,
    chaos: Chaos,
) -> tuple[Observed, str | None, int]:
    """What was observed, what stopped the run early (if anything), and how many
    FailedScheduling Events the client received."""
    connection = await aio_pika.connect_robust(servers.amqp_url, reconnect_interval=1)
    store = RedisStore(servers.redis_url, namespace=NAMESPACE)
    client = ChaosClient(connection, NAMESPACE)
    log_path = options.workdir / "events.jsonl"
    errors: list[str] = []
    try:
        for name in SERVICES:
            await processes.start(name)
        await client.open()
        await workload_under_fire(options, workload, client, chaos, errors)
        if errors:
            await _record_stall(options.workdir, servers, store)
        settle = SETTLE_TIMEOUT if not errors else SETTLE_TIMEOUT / 6
        if not await _settle(store, log_path, settle):
            log.warning("the store did not settle within %g s", settle)
        try:
            await processes.stop_all()
        except AssertionError as failure:
            errors.append(describe(failure))
        observed = await observe(workload, client.bindings(), store, log_path, chaos.crashed)
        failed = len(client.events_with("FailedScheduling"))
        return observed, "; ".join(errors) or None, failed
    finally:
        await store.close()
        await connection.close()


class Injector(Protocol):
    """What injects the faults: :class:`~.faults.Chaos`, or the HA mode's."""

    t0: float

    def restart_clock(self) -> None: ...

    async def run(self, done: asyncio.Event) -> None: ...

    async def revive(self) -> list[str]: ...


async def workload_under_fire(
    options: Options,
    workload: Workload,
    client: ChaosClient,
    chaos: Injector,
    errors: list[str],
) -> None:
    """Publish the nodes, then the pods under fire; what stopped it early (a pod not
    bound by the deadline, a fault that failed) goes to ``errors``, to be judged."""
    await client.publish_all("node", workload.nodes)
    chaos.restart_clock()
    try:
        await under_fire(options, workload, client, chaos)
    except Exception as failure:  # reported in the summary, then judged
        errors.append(describe(failure))
        log.error("the run stopped early: %s", errors[-1])


async def under_fire(
    options: Options, workload: Workload, client: ChaosClient, chaos: Injector
) -> None:
    """Publish the pods paced over the window while ``chaos`` injects its faults, until
    every pod is bound (TimeoutError past the deadline)."""
    done = asyncio.Event()
    total = len(workload.pods)

    async def publish() -> None:
        rate = total / options.window
        for start in range(0, total, CHUNK):
            await asyncio.sleep(max(0.0, chaos.t0 + start / rate - time.monotonic()))
            await client.publish_all("pod", workload.pods[start : start + CHUNK])
        log.info("published %d pods", total)

    async def watch() -> None:
        deadline = chaos.t0 + options.deadline
        try:
            while len(client.bound) < total:
                if time.monotonic() > deadline:
                    missing = total - len(client.bound)
                    raise TimeoutError(
                        f"{missing} of {total} pods not bound within {options.deadline:g} s"
                    )
                with contextlib.suppress(TimeoutError):
                    await client.wait_for(lambda: len(client.bound) >= total, PROGRESS_EVERY)
                log.info("%d of %d pods bound", len(client.bound), total)
                await chaos.revive()
        finally:
            done.set()

    async with asyncio.TaskGroup() as group:
        group.create_task(publish())
        group.create_task(chaos.run(done))
        group.create_task(watch())


async def _record_stall(workdir: Path, servers: PrivateServers, store: RedisStore) -> None:
    """For the record: the broker's queues and the queue service's last published view
    (``ksched queue``'s source) in the run's directory."""
    queues = await servers.describe_queues()
    (workdir / "queues.txt").write_text(queues)
    log.error("queues of the run's broker:\n%s", queues)
    try:
        view = await store.queue_view()
    except RedisError as error:
        view = str(error).encode()
    (workdir / "queue-view.json").write_bytes(view or b"")


def describe(failure: BaseException) -> str:
    """One line: the first leaf of an exception group, its type and first line."""
    while isinstance(failure, BaseExceptionGroup):
        failure = failure.exceptions[0]
    first = str(failure).splitlines()[0] if str(failure) else ""
    return f"{type(failure).__name__}: {first}"


async def _settle(store: RedisStore, log_path: Path, within: float) -> bool:
    """Wait until the store holds no reservation and no lease and has applied the log."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            idle = not await store.assumed() and not await store.leases()
            if idle and await store.applied_seq() >= read_log(log_path).seq:
                return True
        except (OSError, RedisError):
            pass  # Redis or the log not there (yet): try again until the deadline
        await asyncio.sleep(0.5)
    return False


def _facts(
    options: Options,
    chaos: Chaos,
    observed: Observed,
    failed_scheduling: int,
    elapsed: float,
) -> list[tuple[str, str]]:
    faults = ", ".join(f"{name} x{chaos.injected[name]}" for name in sorted(options.faults))
    repeated = sum(len(nodes) - 1 for nodes in observed.decisions.values())
    return [
        ("workload", f"SchedulingBasic, {options.pods} pods on {options.nodes} nodes"),
        ("pods bound (store)", str(len(observed.placed))),
        ("pods with a Binding (client)", str(len(observed.decisions))),
        ("Bindings repeated (at least once)", str(repeated)),
        ("FailedScheduling Events", str(failed_scheduling)),
        ("seed", str(options.seed)),
        ("faults injected", faults or "none"),
        ("elapsed", f"{elapsed:.0f} s"),
        ("run directory", str(options.workdir)),
    ]
