"""compose.yaml's "ha" profile has ops/ha's shape (a 3-node RabbitMQ cluster, Redis with
a replica and three Sentinels, two replicas of every service), and without the profile
compose runs what it ran before."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
HA = {name: s for name, s in SERVICES.items() if "ha" in s.get("profiles", [])}
KSCHED = ("informer", "queue", "scheduler", "binder", "descheduler")
DEFAULT = {"rabbitmq", "redis", "jaeger", "prometheus", "grafana", *KSCHED}


def _host_ports(service: dict[str, Any]) -> set[str]:
    return {str(entry).rsplit(":", 1)[0] for entry in service.get("ports", [])}


def test_without_the_profile_the_stack_is_the_one_before() -> None:
    assert {n for n, s in SERVICES.items() if not s.get("profiles")} == DEFAULT
    assert all(s.get("profiles") == ["ha"] for n, s in SERVICES.items() if n not in DEFAULT)
    assert set(HA) == set(SERVICES) - DEFAULT


def test_the_profile_runs_two_replicas_of_every_service_on_the_cluster() -> None:
    for service in KSCHED:
        ha = HA[f"ha-{service}"]
        assert ha["deploy"]["replicas"] == 2
        assert ha["command"][:2] == ["run", service]
        env = ha["environment"]
        brokers = [urlsplit(url).hostname for url in env["KSCHED_AMQP_URL"].split(",")]
        assert brokers == ["ha-rabbitmq1", "ha-rabbitmq2", "ha-rabbitmq3"]
        assert env["KSCHED_EVENT_LOG"] == "stream://"
        assert env["KSCHED_QUEUE_TYPE"] == "auto"
        sentinel = urlsplit(env["KSCHED_REDIS_URL"])
        assert sentinel.scheme == "redis+sentinel"
        hosts = [h.rsplit(":", 1)[0] for h in sentinel.netloc.rsplit("@", 1)[-1].split(",")]
        assert hosts == ["ha-sentinel1", "ha-sentinel2", "ha-sentinel3"]
        assert sentinel.path == "/ksched/0"
        assert set(ha["depends_on"]) >= {*brokers, *hosts}


def test_the_rabbitmq_nodes_form_one_cluster_by_classic_config() -> None:
    config = (ROOT / "ops" / "ha" / "rabbitmq-cluster.conf").read_text()
    assert "cluster_formation.peer_discovery_backend = classic_config" in config
    listed = re.findall(r"^cluster_formation\.classic_config\.nodes\.\d+ = rabbit@(\S+)$",
                        config, flags=re.M)  # fmt: skip
    assert listed == ["ha-rabbitmq1", "ha-rabbitmq2", "ha-rabbitmq3"]
    cookies = set()
    for name in listed:
        node = HA[name]
        assert node["hostname"] == name  # the node name is rabbit@<hostname>
        assert any(v.startswith("./ops/ha/rabbitmq-cluster.conf:") for v in node["volumes"])
        cookies.add(node["environment"]["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"])
        assert node["environment"]["RABBITMQ_CTL_ERL_ARGS"] in cookies
    assert len(cookies) == 1


def test_redis_has_a_replica_and_three_sentinels_watching_it() -> None:
    assert HA["ha-redis-replica"]["command"][-3:] == ["--replicaof", "ha-redis", "6379"]
    sentinels = [n for n in HA if n.startswith("ha-sentinel")]
    assert len(sentinels) == 3
    for name in sentinels:
        script = HA[name]["command"][-1]
        assert "'sentinel monitor ksched ha-redis 6379 2'" in script
        assert "exec redis-server /data/sentinel.conf --sentinel" in script


def test_the_profile_takes_no_host_port_the_default_stack_takes() -> None:
    default = set().union(*(_host_ports(SERVICES[n]) for n in DEFAULT))
    ha = set().union(*(_host_ports(s) for s in HA.values()))
    assert not default & ha


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker is not installed")
def test_docker_compose_accepts_the_profile() -> None:
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip("docker has no compose plugin here")
    for profile in ([], ["--profile", "ha"]):
        done = subprocess.run(
            ["docker", "compose", *profile, "config", "--quiet"],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
