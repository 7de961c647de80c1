"""The whole HA deployment: start, supervise, stop; and its state file.

Ports from one base: RabbitMQ ``base .. base+20`` (:mod:`.rabbit_cluster`), Redis and
its Sentinels ``base+30 .. base+34`` (:mod:`.redis_sentinel`), the services' metrics
ports ``base+40 ..``. ``workdir/state.json`` records the supervisor's pid, every
process's pid (each leads a process group of its own) and the URLs, so that ``down``
can stop what a dead supervisor left behind.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ops.ha import rabbit_cluster, redis_sentinel, services
from ops.ha.processes import Child, HAError, port_free

PORTS = 50
DEFAULT_BASE_PORT = 26000
"""Below Linux's ephemeral ports (32768-60999), so no outgoing connection takes one."""
REDIS_OFFSET = 30
METRICS_OFFSET = 40
BACKOFF = (1.0, 30.0)
"""Seconds before a process that exited is started again: doubling from the first to
the second."""
FAILOVER_WAIT = 15.0
"""Seconds a Redis server that exited waits for the Sentinels to fail over."""
STATE = "state.json"

log = logging.getLogger("ha")


def unavailable() -> str | None:
    """Why the deployment cannot run on this machine, or None."""
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    return rabbit_cluster.available()


@dataclass
class Deployment:
    workdir: Path
    base_port: int = DEFAULT_BASE_PORT
    leases: services.Leases = field(default_factory=services.Leases)
    with_services: bool = True
    namespace: str | None = None
    rabbit: rabbit_cluster.RabbitCluster | None = None
    redis: redis_sentinel.RedisSentinel | None = None
    services: list[Child] = field(default_factory=list)

    def start(self) -> None:
        """Start the cluster, Redis with its Sentinels and (``with_services``) every
        replica; return once each is ready (bounded). Stops what it started on failure."""
        busy = [p for p in range(self.base_port, self.base_port + PORTS) if not port_free(p)]
        if busy:
            raise HAError(
                f"ports {self.base_port}..{self.base_port + PORTS - 1} are not free "
                f"(in use: {', '.join(map(str, busy[:5]))}); another deployment up? "
                "(ops/ha/status, or --base-port)"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            try:
                self.redis = redis_sentinel.start(
                    self.workdir / "redis", self.base_port + REDIS_OFFSET
                )
            except (AssertionError, OSError) as error:
                raise HAError(f"Redis with Sentinel did not start: {error}") from None
            self.save()
            self.rabbit = rabbit_cluster.RabbitCluster(self.workdir / "rabbitmq", self.base_port)
            self.rabbit.start()
            self.save()
            if self.with_services:
                shared = services.environment(
                    self.rabbit.amqp_url, self.redis.url, self.leases, self.namespace
                )
                self.services = services.replicas(
                    self.workdir / "services",
                    self.base_port + METRICS_OFFSET,
                    shared,
                    os.environ,
                )
                for child in self.services:
                    child.start()
                    self.save()
                for child in self.services:
                    child.wait_ready(*services.READY, timeout=90.0)
        except BaseException:
            self.stop()
            raise
        self.save(ready=True)

    def stop(self) -> None:
        """Stop the services first, then the cluster and Redis (each bounded)."""
        for child in self.services:
            child.signal(signal.SIGCONT)
            child.signal(signal.SIGTERM)
        for child in self.services:
            child.stop()
        if self.rabbit is not None:
            self.rabbit.stop()
        if self.redis is not None:
            self.redis.stop()

    def children(self) -> list[Child]:
        out = list(self.services)
        if self.rabbit is not None:
            out += [self.rabbit.epmd, *(node.child for node in self.rabbit.nodes)]
        return out

    def pids(self) -> dict[str, int]:
        """Every process's name → pid (each leads a process group of its own)."""
        out = {c.name: c.pid for c in self.children() if c.pid is not None}
        if self.redis is not None:
            sentinels = self.redis.sentinel_ports
            for port, process in self.redis.processes.items():
                out[f"{'sentinel' if port in sentinels else 'redis'}-{port}"] = process.pid
        return out

    def supervise(self, stop: list[bool]) -> None:
        """Start again whatever exits, with a doubling backoff, until ``stop[0]``.
        A Redis server that exited waits until the Sentinels name another master (at
        most :data:`FAILOVER_WAIT`), so it comes back as a replica, not an empty master."""
        due: dict[str, float] = {}
        backoff: dict[str, float] = {}
        while not stop[0]:
            now = time.monotonic()
            for name, code, restart in self._exited():
                if name not in due:
                    delay = backoff.get(name, BACKOFF[0])
                    log.warning("%s exited (code %s); starting it again in %g s", name, code, delay)
                    due[name] = now + delay
                    backoff[name] = min(BACKOFF[1], delay * 2)
                elif now >= due[name] and restart(now - due[name]):
                    del due[name]
                    self.save(ready=True)
            time.sleep(0.5)

    def _exited(self) -> list[tuple[str, int | None, Callable[[float], bool]]]:
        """What exited: its name, exit code, and how to start it again (given the
        seconds since it was due; False: not yet)."""
        out: list[tuple[str, int | None, Callable[[float], bool]]] = []
        for child in self.children():
            if child.process is not None and not child.running:
                out.append((child.name, child.process.returncode, partial(_restart, child)))
        if self.redis is not None:
            for port in self.redis.data_ports:
                process = self.redis.processes.get(port)
                if process is not None and process.poll() is not None:
                    revive = partial(_restart_redis, self.redis, port)
                    out.append((f"redis-{port}", process.returncode, revive))
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "supervisor": os.getpid(),
            "base_port": self.base_port,
            "amqp_url": self.rabbit.amqp_url if self.rabbit else None,
            "redis_url": self.redis.url if self.redis else None,
            "rabbitmq_nodes": [n.name for n in self.rabbit.nodes] if self.rabbit else [],
            "epmd_port": self.rabbit.epmd_port if self.rabbit else None,
            "sentinel_ports": self.redis.sentinel_ports if self.redis else [],
            "processes": self.pids(),
        }

    def save(self, *, ready: bool = False) -> None:
        state = {**self.describe(), "ready": ready}
        path = self.workdir / STATE
        path.with_suffix(".tmp").write_text(json.dumps(state, indent=2) + "\n")
        path.with_suffix(".tmp").replace(path)


def _restart(child: Child, _waited: float) -> bool:
    child.kill()  # what is left of its process group
    child.start()
    return True


def _restart_redis(redis: redis_sentinel.RedisSentinel, port: int, waited: float) -> bool:
    try:
        if redis.master_port == port and waited < FAILOVER_WAIT:
            return False  # the Sentinels have not failed over yet
        del redis.processes[port]
        redis.restart(port)
    except (AssertionError, OSError) as error:
        log.warning("redis on port %d: %s", port, error)
    return True


def read_state(workdir: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads((workdir / STATE).read_text())
    except (OSError, ValueError):
        return None
    return state
