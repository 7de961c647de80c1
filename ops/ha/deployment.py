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
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops.ha import rabbit_cluster, redis_sentinel, services
from ops.ha.processes import Child, HAError, port_free

PORTS = 50
DEFAULT_BASE_PORT = 35600
REDIS_OFFSET = 30
METRICS_OFFSET = 40
BACKOFF = (1.0, 30.0)
"""Seconds before a process that exited is started again: doubling from the first to
the second."""
STATE = "state.json"

log = logging.getLogger("ha")


def unavailable() -> str | None:
    """Why the deployment cannot run on this machine, or None."""
    return rabbit_cluster.available() or redis_sentinel.available()


@dataclass
class Deployment:
    workdir: Path
    base_port: int = DEFAULT_BASE_PORT
    leases: services.Leases = field(default_factory=services.Leases)
    with_services: bool = True
    namespace: str | None = None
    rabbit: rabbit_cluster.RabbitCluster | None = None
    redis: redis_sentinel.SentinelDeployment | None = None
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
            self.redis = redis_sentinel.start(self.workdir / "redis", self.base_port + REDIS_OFFSET)
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
        if self.redis is not None:
            out += [*self.redis.servers.values(), *self.redis.sentinels.values()]
        return out

    def supervise(self, stop: list[bool]) -> None:
        """Start again whatever exits, with a doubling backoff, until ``stop[0]``."""
        due: dict[str, float] = {}
        backoff: dict[str, float] = {}
        while not stop[0]:
            now = time.monotonic()
            for child in self.children():
                if child.running or child.process is None:
                    continue
                if child.name not in due:
                    delay = backoff.get(child.name, BACKOFF[0])
                    log.warning("%s exited (code %s); starting it again in %g s",
                                child.name, child.process.returncode, delay)  # fmt: skip
                    due[child.name] = now + delay
                    backoff[child.name] = min(BACKOFF[1], delay * 2)
                elif now >= due.pop(child.name):
                    child.start()
                    self.save(ready=True)
            time.sleep(0.5)

    def describe(self) -> dict[str, Any]:
        return {
            "supervisor": os.getpid(),
            "base_port": self.base_port,
            "amqp_url": self.rabbit.amqp_url if self.rabbit else None,
            "redis_url": self.redis.url if self.redis else None,
            "rabbitmq_nodes": [n.name for n in self.rabbit.nodes] if self.rabbit else [],
            "epmd_port": self.rabbit.epmd_port if self.rabbit else None,
            "sentinel_ports": self.redis.sentinel_ports if self.redis else [],
            "processes": {c.name: c.pid for c in self.children() if c.pid is not None},
        }

    def save(self, *, ready: bool = False) -> None:
        state = {**self.describe(), "ready": ready}
        path = self.workdir / STATE
        path.with_suffix(".tmp").write_text(json.dumps(state, indent=2) + "\n")
        path.with_suffix(".tmp").replace(path)


def read_state(workdir: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads((workdir / STATE).read_text())
    except (OSError, ValueError):
        return None
    return state
