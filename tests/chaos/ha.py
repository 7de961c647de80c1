"""The chaos run's HA mode (``ops/chaos --ha``), start to finish, every wait bounded.

1. Start the local HA deployment's servers (:mod:`ops.ha`: a 3-node RabbitMQ cluster,
   Redis with a replica and three Sentinels) on free ports under the run's directory,
   and two replicas of every service against them (:mod:`.ha_processes`) with short
   leases.
2. Publish the nodes, then the pods paced over the window, through a client that fails
   over between the nodes (:class:`~.client.HAClient`), while :class:`~.ha_faults.HAChaos`
   kills leaders, RabbitMQ nodes and Redis masters.
3. Wait until the client has a Binding for every pod, or the deadline; then until the
   store settles (no reservation, no dispatch lease, the whole log applied).
4. Read the leases (each role: one leader), stop the replicas, read the stream and the
   store, judge (:mod:`.checks` and :mod:`.ha_log`), stop the servers, print the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time

from redis.exceptions import RedisError

from ops.ha.deployment import PORTS, Deployment
from ops.ha.processes import free_block
from services.common.store.redis import RedisStore
from tests.chaos.checks import Observed, Row, evaluate, verdict
from tests.chaos.client import HAClient
from tests.chaos.ha_faults import HAChaos
from tests.chaos.ha_log import entries_in_order, last_seq, leader_rows, read_entries, seq_rows
from tests.chaos.ha_processes import LEASE_SECONDS, LEASES, ROLES, HAProcesses
from tests.chaos.observe import fold, observe
from tests.chaos.run import Options, describe, workload_under_fire
from tests.chaos.workload import NAMESPACE, scheduling_basic

STREAM = f"{NAMESPACE}.ksched.eventlog"
"""The event log's stream (its queue): ``stream://`` under the run's namespace."""
SETTLE_TIMEOUT = 60.0

log = logging.getLogger("chaos.ha")


async def ha_run(options: Options) -> int:
    """Run, print the summary; 0 when every invariant held, 1 otherwise."""
    started = time.monotonic()
    ha = Deployment(options.workdir / "ha", free_block(PORTS), LEASES, with_services=False)
    await asyncio.to_thread(ha.start)
    assert ha.rabbit is not None and ha.redis is not None
    processes = HAProcesses(options.workdir, ha.rabbit.amqp_url, ha.redis.url)
    client = HAClient(ha.rabbit.urls, NAMESPACE)
    chaos = HAChaos(
        processes, ha.rabbit, ha.redis, random.Random(options.seed), options.faults,
        options.window, LEASE_SECONDS, lambda: len(client.bound), options.pods, STREAM,
    )  # fmt: skip
    rows: list[Row] = []
    facts: list[tuple[str, str]] = []
    try:
        rows, facts = await _run(options, ha, processes, client, chaos)
    except Exception as failure:  # the run could not be judged: say why in one line
        log.error("the run failed", exc_info=True)
        rows = [Row("run completed", "no", False, describe(failure))]
    finally:
        with contextlib.suppress(AssertionError):
            await processes.stop_all()
        for key in list(processes._logs):
            (options.workdir / f"{key}.log").write_text(processes.log(key) + "\n")
        await asyncio.to_thread(ha.stop)
    facts.append(("elapsed", f"{time.monotonic() - started:.0f} s"))
    return verdict(chaos.timeline, rows, facts)


async def _run(
    options: Options,
    ha: Deployment,
    processes: HAProcesses,
    client: HAClient,
    chaos: HAChaos,
) -> tuple[list[Row], list[tuple[str, str]]]:
    assert ha.rabbit is not None and ha.redis is not None
    workload = scheduling_basic(options.pods, options.nodes)
    errors: list[str] = []
    await processes.start_all()
    await client.connect()
    try:
        await workload_under_fire(options, workload, client, chaos, errors)
        store = RedisStore(f"redis://127.0.0.1:{ha.redis.master_port}/0", namespace=NAMESPACE)
        try:
            await _settle(store, ha.rabbit.amqp_url, SETTLE_TIMEOUT / (6 if errors else 1))
            await chaos.revive()  # a deposed leader that exited since the last look
            try:
                leases = await processes.leases()
                read_at = time.time()  # expiry is judged as of the reading
            except AssertionError as failure:  # judged below: no role has a leader
                leases, read_at = [], time.time()
                errors.append(describe(failure))
            (options.workdir / "leases.json").write_text(json.dumps(leases, indent=2) + "\n")
            ours = {c.pid for c in processes.children.values() if c.returncode is None}
            try:
                await processes.stop_all()
            except AssertionError as failure:
                errors.append(describe(failure))
            unreadable = None
            try:
                bodies = await read_entries(ha.rabbit.amqp_url, NAMESPACE)
            except ValueError as failure:  # a gap, or an entry out of order
                bodies, unreadable = [], describe(failure)
            ordered, conflicting, missing, again = entries_in_order(bodies)
            observed = await observe(
                workload, client.bindings(), store, fold(ordered), chaos.crashed
            )
        finally:
            await store.close()
    finally:
        await client.close()
    rows = evaluate(observed) + seq_rows(conflicting, missing, again, unreadable)
    rows += leader_rows(leases, ROLES, ours, now=read_at)
    if errors:
        rows.append(Row("run completed", "no", False, "; ".join(errors)))
    return rows, _facts(options, chaos, observed, len(bodies))


async def _settle(store: RedisStore, amqp_url: str, within: float) -> bool:
    """Wait until the store holds no reservation and no dispatch lease and has applied
    the whole log."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            idle = not await store.assumed() and not await store.leases()
            if idle and await store.applied_seq() >= await last_seq(amqp_url, NAMESPACE):
                return True
        except (OSError, RedisError, RuntimeError) as error:
            log.info("not settled yet: %s", error)
        await asyncio.sleep(1.0)
    log.warning("the store did not settle within %g s", within)
    return False


def _facts(
    options: Options, chaos: HAChaos, observed: Observed, entries: int
) -> list[tuple[str, str]]:
    faults = ", ".join(f"{name} x{chaos.injected[name]}" for name in sorted(options.faults))
    failovers = "; ".join(
        f"{role}: leader {elected:.1f} s, Binding {binding:.1f} s"
        if binding is not None
        else f"{role}: leader {elected:.1f} s, no Binding after"
        for role, elected, binding in chaos.failovers
    )
    return [
        ("workload", f"SchedulingBasic, {options.pods} pods on {options.nodes} nodes (HA)"),
        ("pods bound (store)", str(len(observed.placed))),
        ("pods with a Binding (client)", str(len(observed.decisions))),
        ("log entries (stream, as read)", str(entries)),
        ("failover (death to leader, to Binding)", failovers or "none measured"),
        ("seed", str(options.seed)),
        ("faults injected", faults or "none"),
        ("run directory", str(options.workdir)),
    ]
