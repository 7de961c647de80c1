"""``ksched up``: every service as its own process, supervised.

Before it starts anything, ``up`` checks what a restart could not fix (:func:`preflight`:
the configuration, the policy, the event log against the store) and exits 2 on the
first problem, one line naming the file. Then a child that exits is started again
after an exponential backoff (services.cli.backoff), except in two cases:

- it exited with code 2 (bad input: a configuration, a flag, an event log that does not
  match the store): a restart would fail the same way, so ``up`` stops every other
  child and exits 2, after the child's own line naming what is wrong;
- the descheduler exited 0: with interval 0 it runs one cycle, as upstream.

On SIGTERM or SIGINT ``up`` stops every child (SIGTERM, then SIGKILL for any still
running after the bound) and exits 0 (SIGTERM) or 130 (SIGINT, Ctrl-C); a second
signal kills them at once::

    spawn all ──▶ poll ──exit 2──────────▶ stop all, exit 2
                   │ ──other exit──▶ backoff ──▶ spawn it again
                   └──signal──────────▶ stop all, exit 0 / 130
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

from contracts.k8s import DEFAULT_SCHEDULER_NAME
from services.cli.backoff import Backoff
from services.cli.errors import BAD_INPUT, INTERRUPTED, OK, InputError
from services.cli.serviceflags import FLAGS, MAX_PORT, SERVICES, argv_for, duration
from services.cli.shutdown import STOP_BOUND
from services.common.clock import SystemClock
from services.common.leaderelection import default_identity
from services.common.redact import redact
from services.common.settings import ENV, Settings
from services.common.store import Epoch, LeaderLease

log = logging.getLogger("ksched")

SERVED_METRICS = ("informer", "queue", "scheduler", "binder", "descheduler")
"""Every service serves /metrics and its health on ``--metrics-port``, in the order
``ksched up --metrics-port PORT`` numbers their ports from PORT (without it, `up`
uses each service's documented default, services.common.observe.DEFAULT_PORTS)."""

IDENTITY = ENV["identity"]
"""The variable of the leader-election identity ``up`` gives its children."""

UP_POLL = 0.2
"""Seconds between ``ksched up``'s looks at its children."""


class _Child:
    """One service process of ``ksched up`` and its restart backoff."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        clock: SystemClock,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = env
        self.backoff = Backoff(clock)
        self.process: subprocess.Popen[bytes] | None = None
        self.restart_at = 0.0
        self.finished = False
        """A descheduler with interval 0 ran its one cycle and exited 0: not restarted."""

    def spawn(self) -> None:
        # Its own process group: a Ctrl-C in the terminal reaches `up` only, which
        # stops the children once (a second signal would make them exit at once).
        self.process = subprocess.Popen(self.argv, process_group=0, env=self.env)
        self.backoff.started()
        log.info("started %s (pid %d)", self.name, self.process.pid)


def service_argv(args: argparse.Namespace) -> dict[str, list[str]]:
    """The flags ``ksched up`` gives one service only: ``--metrics-port``, PORT to the
    informer, PORT+1 to the queue, PORT+2 to the scheduler, PORT+3 to the binder, PORT+4
    to the descheduler (0: each picks a free port; not given: each service's default
    port); the descheduler's policy and interval. InputError, before anything starts,
    for a flag ``up`` cannot honour: a port range past 65535, a wrong duration, the
    descheduler's ``--interval``, ``--dry-run`` or ``--prometheus-token-file`` without
    ``--policy`` (no descheduler
    runs then)."""
    port = getattr(args, "metrics_port", None)
    flags: dict[str, list[str]] = {}
    if getattr(args, "policy", None):
        duration(getattr(args, "interval", None))  # a wrong duration: exit 2 before starting
        flags["descheduler"] = ["--policy", args.policy, "--interval", args.interval or "5m"]
        if getattr(args, "dry_run", None):
            flags["descheduler"].append("--dry-run")
        token = getattr(args, "prometheus_token_file", None)
        if token is not None:
            flags["descheduler"] += ["--prometheus-token-file", os.path.abspath(token)]
    else:
        for dest in ("interval", "dry_run", "prometheus_token_file"):
            if getattr(args, dest, None) is not None:
                raise InputError(
                    f"{FLAGS[dest]} is the descheduler's, and up runs the descheduler only "
                    "with --policy POLICY.yaml: give --policy, or leave it out"
                )
    from services.common.observe import DEFAULT_PORTS

    if port and port + len(SERVED_METRICS) - 1 > MAX_PORT:
        last = port + len(SERVED_METRICS) - 1
        raise InputError(
            f"--metrics-port {port}: up numbers {len(SERVED_METRICS)} ports from it, and the "
            f"last, {last}, is above {MAX_PORT}"
        )
    for i, name in enumerate(SERVED_METRICS):
        chosen = DEFAULT_PORTS[name] if port is None else (port + i if port else 0)
        flags.setdefault(name, []).extend(["--metrics-port", str(chosen)])
    return flags


PREFLIGHT_TIMEOUT = 3.0
"""Seconds ``up`` gives Redis to answer its check of the event log; one that does not
is left to the informer, which retries it at start."""


def preflight(settings: Settings, policy: str | None) -> tuple[str, ...]:
    """The services ``up`` runs, once what they would read is checked: a bad
    ``--config`` or ``--policy``, or an event log that is not the one the store was
    built from, is one line naming the file (exit 2) before anything starts, not
    children that each fail the same way."""
    names = [DEFAULT_SCHEDULER_NAME]
    if settings.config is not None:
        from services.framework.config import load_config

        names = [p.scheduler_name for p in load_config(settings.config).profiles]
    services: tuple[str, ...] = SERVICES
    if policy is not None:
        from services.descheduler.policy import load_policy
        from services.descheduler.profile import check_node_fit_profiles
        from services.descheduler.registry import in_tree_registry

        check_node_fit_profiles(load_policy(policy, in_tree_registry()), names)
        services = (*SERVICES, "descheduler")
    _check_event_log(settings)
    return services


def _check_event_log(settings: Settings) -> None:
    """LogMismatchError if the store is live at a seq the event log does not reach
    (a relative ``--event-log`` given in another directory); an OSError naming the
    file if the log exists and cannot be read. A store that cannot be reached now is
    the informer's to check, and so is a log that does not exist yet (it creates it)."""
    if settings.informer.event_log.startswith("memory://"):
        return
    from services.common.eventlog import FileEventLog, check_matches, is_stream

    found = asyncio.run(_store_epoch(settings))
    if found is None:
        return
    epoch, informer = found
    if epoch.state != "live":  # blank or building: the informer rebuilds
        return
    if informer is not None and not informer.expired(time.time()):
        # Another informer leads and appends to the log now: reading it here could
        # take its append in progress for a torn line. This up's informer stands by
        # and checks the log once it leads.
        log.info(
            "ksched up: the informer lease is held by %s: this up's informer stands by",
            informer.holder,
        )
        return
    if is_stream(settings.informer.event_log):
        last = asyncio.run(_stream_last_seq(settings))
        if last is not None:
            check_matches(f"event log {settings.informer.event_log}", last, epoch.seq)
        return
    path = os.path.abspath(settings.informer.event_log)
    last = 0
    if os.path.exists(path):
        event_log = FileEventLog(path)
        last = event_log.last_seq()
        asyncio.run(event_log.close())
    check_matches(f"event log {path}", last, epoch.seq)


async def _stream_last_seq(settings: Settings) -> int | None:
    """The last seq of the stream log, or None when the broker does not answer within
    PREFLIGHT_TIMEOUT (the informer checks it then)."""
    from services.cli.eventlogs import open_log

    event_log = open_log(settings.informer.event_log, settings)
    try:
        async with asyncio.timeout(PREFLIGHT_TIMEOUT):
            await event_log.connect()
        return event_log.last_seq()
    except (OSError, TimeoutError) as error:
        log.info("ksched up: the informer checks the event log (broker: %s)", redact(str(error)))
        return None
    finally:
        await event_log.close()


async def _store_epoch(settings: Settings) -> tuple[Epoch, LeaderLease | None] | None:
    """The store's epoch and the informer's leader lease, or None when Redis does not
    answer within PREFLIGHT_TIMEOUT."""
    from services.common.store import open_settings_store

    store = open_settings_store(settings)
    try:
        async with asyncio.timeout(PREFLIGHT_TIMEOUT):
            epoch = await store.epoch()
            return epoch, (await store.leader_leases()).get("informer")
    except Exception as error:
        log.info("ksched up: the informer checks the event log (Redis: %s)", redact(str(error)))
        return None
    finally:
        await store.close()


def _ended(code: int) -> str:
    """How a child ended, from Popen's return code (negative: killed by that signal)."""
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def up(
    settings_args: Sequence[str], only: Mapping[str, Sequence[str]], services: Sequence[str]
) -> int:
    """Run ``services`` as processes until a signal, or until one exits 2 (see the
    module docstring); the exit code. ``settings_args``: flags of ``ksched run``, each
    child given those it honours (services.cli.serviceflags); ``only[name]``: flags for
    that service alone (``--metrics-port``, the descheduler's policy)."""
    command = [sys.executable, "-m", "services.cli.main", "run"]
    # One holder identity for this up's children (each role has a lease of its own):
    # a child restarted after a crash takes its lease back at once instead of waiting
    # a lease duration for its dead predecessor's to expire. Never shared with another
    # up: that one's children stand by.
    env = {IDENTITY: default_identity(), **os.environ}
    clock = SystemClock()
    children = [
        _Child(n, [*command, n, *argv_for(n, settings_args), *only.get(n, ())], clock, env)
        for n in services
    ]
    signals: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        signals.append(signum)
        if len(signals) > 1:
            _kill(children)
            os.write(
                sys.stderr.fileno(),
                f"ksched up: {signal.Signals(signum).name} while stopping: "
                "killed every service\n".encode(),
            )
            os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for child in children:
        child.spawn()
    refused: _Child | None = None
    while not signals and refused is None:
        for child in children:
            if child.finished:
                continue
            if child.process is None:
                if clock.now() >= child.restart_at:
                    child.spawn()
                continue
            code = child.process.poll()
            if code is None:
                continue
            if code == BAD_INPUT:
                child.process, refused = None, child
                break
            if code == 0 and child.name == "descheduler":
                child.process, child.finished = None, True
                log.info("descheduler finished its cycle (interval 0)")
                continue
            delay = child.backoff.failed()
            child.process, child.restart_at = None, clock.now() + delay
            log.warning(
                "%s %s; restarting in %g s (restart %d)",
                child.name,
                _ended(code),
                delay,
                child.backoff.failures,
            )
        if refused is None:
            time.sleep(UP_POLL)
    if refused is not None:
        log.error(
            "ksched up: %s exited with code 2 (bad input, named in its line above; a "
            "restart cannot fix it): stopping every service",
            refused.name,
        )
    else:
        log.info("ksched up: %s: stopping every service", signal.Signals(signals[0]).name)
    _stop(children, clock)
    if refused is not None:
        return BAD_INPUT
    return INTERRUPTED if signals[0] == signal.SIGINT else OK


def _stop(children: Sequence[_Child], clock: SystemClock) -> None:
    """SIGTERM every running child, then SIGKILL any still running after STOP_BOUND."""
    running = [c.process for c in children if c.process is not None]
    for process in running:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
    deadline = clock.now() + STOP_BOUND
    for process in running:
        try:
            process.wait(timeout=max(0.0, deadline - clock.now()))
        except subprocess.TimeoutExpired:
            log.warning("pid %d did not stop within %g s: killing it", process.pid, STOP_BOUND)
            process.kill()
            process.wait()


def _kill(children: Sequence[_Child]) -> None:
    for child in children:
        if child.process is not None:
            with contextlib.suppress(ProcessLookupError):
                child.process.kill()


__all__ = ["PREFLIGHT_TIMEOUT", "SERVED_METRICS", "UP_POLL", "preflight", "service_argv", "up"]
