"""The ksched services of the HA deployment: two replicas of each, all pointed at the
cluster with the settings every service shares (see :func:`environment`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ops.ha.processes import Child

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("informer", "queue", "scheduler", "binder", "descheduler")
REPLICAS = 2
POLICY = ROOT / "ops" / "examples" / "descheduler-policy.yaml"
READY = ("started", "became the", "waiting for the", "attempting to acquire leader lease")
"""What a service logs once it runs: ``NAME started``, ``became the ROLE leader (token
N)``, or as a standby ``attempting to acquire leader lease ROLE...`` and ``waiting for
the ROLE lease (held by HOLDER)``."""


@dataclass(frozen=True)
class Leases:
    """Leader election timing (Go durations), as ``--leader-elect-*`` take them."""

    duration: str = "15s"
    renew_deadline: str = "10s"
    retry_period: str = "2s"


def environment(
    amqp_url: str, redis_url: str, leases: Leases, namespace: str | None = None
) -> dict[str, str]:
    """The settings every replica shares: every broker of the cluster (connections fail
    over between them), the Sentinels, the event log on a RabbitMQ stream, quorum queues
    (``auto``: the URL lists several brokers) and the lease timing."""
    env = {
        "KSCHED_AMQP_URL": amqp_url,
        "KSCHED_REDIS_URL": redis_url,
        "KSCHED_EVENT_LOG": "stream://",
        "KSCHED_QUEUE_TYPE": "auto",
        "KSCHED_LEADER_ELECT_LEASE_DURATION": leases.duration,
        "KSCHED_LEADER_ELECT_RENEW_DEADLINE": leases.renew_deadline,
        "KSCHED_LEADER_ELECT_RETRY_PERIOD": leases.retry_period,
    }
    if namespace:
        env["KSCHED_NAMESPACE"] = namespace
    return env


def replica_name(service: str, replica: int) -> str:
    """``informer-1``, ``informer-2``, …: the process's name in logs and the state file."""
    return f"{service}-{replica}"


def command(service: str, replica: int, metrics_port: int) -> list[str]:
    """``ksched run SERVICE`` for one replica, on its own metrics port."""
    argv = [sys.executable, "-m", "services.cli.main", "run", service]
    argv += ["--metrics-port", str(metrics_port)]
    if service == "scheduler":
        argv += ["--replica", replica_name(service, replica)]
    if service == "descheduler":
        argv += ["--policy", str(POLICY), "--interval", "5m"]
    return argv


def replicas(
    workdir: Path, base_metrics_port: int, shared: Mapping[str, str], env: Mapping[str, str]
) -> list[Child]:
    """Every replica of every service, not started; ``env`` is the process environment
    the shared settings are laid over."""
    children = []
    port = base_metrics_port
    for service in SERVICES:
        for replica in range(1, REPLICAS + 1):
            name = replica_name(service, replica)
            argv = command(service, replica, port)
            children.append(Child(name, argv, {**env, **shared}, workdir / f"{name}.log"))
            port += 1
    return children
