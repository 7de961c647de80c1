"""compose.yaml runs the infrastructure and each ksched service the way the CLI expects."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
KSCHED_SERVICES = ["informer", "queue", "scheduler", "binder"]


def _container_ports(service: dict[str, Any]) -> set[int]:
    """Container-side ports of ``ports`` entries ("H:C", "IP:H:C", "C/tcp" or long form)."""
    ports: set[int] = set()
    for entry in service.get("ports", []):
        if isinstance(entry, dict):
            ports.add(int(entry["target"]))
        else:
            ports.add(int(str(entry).split("/")[0].rsplit(":", 1)[-1]))
    return ports


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


@pytest.mark.parametrize(
    ("name", "ports"),
    [("rabbitmq", {5672, 15672}), ("jaeger", {16686, 4317, 4318})],
)
def test_infrastructure_services_publish_their_ports(name: str, ports: set[int]) -> None:
    assert name in SERVICES
    assert ports <= _container_ports(SERVICES[name])


def test_infrastructure_images() -> None:
    rabbitmq = SERVICES["rabbitmq"]["image"]
    assert rabbitmq.startswith("rabbitmq:3.13.") and rabbitmq.endswith("-management")
    assert SERVICES["redis"]["image"].split(":")[0] == "redis"
    assert SERVICES["jaeger"]["image"].startswith("jaegertracing/jaeger:2.")


def test_every_image_is_pinned_to_an_exact_version() -> None:
    """``name:X.Y.Z`` (a suffix such as ``-management`` allowed), the Dockerfile's base too."""
    exact = re.compile(r"^[\w./-]+:v?\d+\.\d+\.\d+(-[\w.-]+)?$")
    images = {n: s["image"] for n, s in SERVICES.items() if "image" in s}
    dockerfile = (ROOT / "ops" / "Dockerfile").read_text().splitlines()
    bases = [line.split()[1] for line in dockerfile if line.startswith("FROM ")]
    images |= {f"Dockerfile FROM {i}": base for i, base in enumerate(bases)}
    floating = {n: image for n, image in images.items() if not exact.match(image)}
    assert not floating


def test_every_long_running_infrastructure_service_has_a_healthcheck() -> None:
    missing = [n for n, s in SERVICES.items() if "image" in s and "healthcheck" not in s]
    assert not missing
    assert "rabbitmq-diagnostics" in SERVICES["rabbitmq"]["healthcheck"]["test"]
    assert "redis-cli" in SERVICES["redis"]["healthcheck"]["test"]


def test_redis_asks_for_a_password_and_is_not_published_on_the_host() -> None:
    redis = SERVICES["redis"]
    assert not redis.get("ports")
    command = redis["command"]
    password = command[command.index("--requirepass") + 1]
    assert password and _environment(redis)["REDISCLI_AUTH"] == password
    for name in [*KSCHED_SERVICES, "descheduler"]:
        url = urlsplit(_environment(SERVICES[name])["KSCHED_REDIS_URL"])
        assert url.password == password, name


def test_redis_keeps_the_projection_across_restarts() -> None:
    command = SERVICES["redis"]["command"]
    command = command if isinstance(command, list) else command.split()
    assert command[command.index("--appendonly") + 1] == "yes"
    assert any(str(v).endswith(":/data") for v in SERVICES["redis"].get("volumes", []))


@pytest.mark.parametrize("name", KSCHED_SERVICES)
def test_ksched_service_runs_the_cli_against_the_compose_services(name: str) -> None:
    service = SERVICES[name]
    assert service["command"][:2] == ["run", name]  # --metrics-port: tests/unit/ops
    assert (ROOT / service["build"]["context"] / service["build"]["dockerfile"]).is_file()

    env = _environment(service)
    amqp = urlsplit(env["KSCHED_AMQP_URL"])
    assert (amqp.scheme, amqp.hostname, amqp.port or 5672) == ("amqp", "rabbitmq", 5672)
    redis = urlsplit(env["KSCHED_REDIS_URL"])
    assert (redis.scheme, redis.hostname, redis.port or 6379) == ("redis", "redis", 6379)
    otlp = urlsplit(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
    assert (otlp.hostname, otlp.port) == ("jaeger", 4318)
    assert env["OTEL_SERVICE_NAME"] == f"ksched-{name}"

    depends_on = service["depends_on"]
    for infra in ("rabbitmq", "redis"):
        assert depends_on[infra]["condition"] == "service_healthy"


def test_informer_keeps_its_event_log_on_a_named_volume() -> None:
    informer = SERVICES["informer"]
    log = Path(_environment(informer)["KSCHED_EVENT_LOG"])
    mounts = [str(v).split(":") for v in informer["volumes"]]
    mounted = {target: source for source, target, *_ in mounts}
    assert any(log.is_relative_to(target) for target in mounted)
    source = next(source for target, source in mounted.items() if log.is_relative_to(target))
    assert source in (COMPOSE.get("volumes") or {})


def test_several_schedulers() -> None:
    assert SERVICES["scheduler"].get("deploy", {}).get("replicas", 1) >= 2


def test_the_descheduler_runs_the_example_policy_every_five_minutes() -> None:
    from services.descheduler.policy import load_policy
    from services.descheduler.registry import in_tree_registry

    service = SERVICES["descheduler"]
    command = service["command"]
    assert command[:2] == ["run", "descheduler"]
    policy = command[command.index("--policy") + 1]
    assert command[command.index("--interval") + 1] == "5m"
    mounts = {t: src for src, t, *_ in (str(v).split(":") for v in service["volumes"])}
    source = ROOT / mounts[policy]
    assert load_policy(source, in_tree_registry()).profiles
    env = _environment(service)
    assert env["OTEL_SERVICE_NAME"] == "ksched-descheduler"
    assert urlsplit(env["KSCHED_REDIS_URL"]).hostname == "redis"


def test_every_dependency_and_volume_exists() -> None:
    volumes = set(COMPOSE.get("volumes") or {})
    dependencies = [
        (n, d) for n, service in SERVICES.items() for d in service.get("depends_on", {})
    ]
    named = [
        (n, source)
        for n, service in SERVICES.items()
        for source in (str(mount).split(":")[0] for mount in service.get("volumes", []))
        if not source.startswith((".", "/"))
    ]
    assert dependencies and named, "compose.yaml declares no dependency or no named volume"
    unknown = [f"{n} depends on unknown {d}" for n, d in dependencies if d not in SERVICES]
    assert not unknown
    undeclared = [f"{n} mounts undeclared volume {v}" for n, v in named if v not in volumes]
    assert not undeclared


def test_the_image_runs_the_ksched_console_script() -> None:
    dockerfile = (ROOT / "ops" / "Dockerfile").read_text()
    assert any(line.startswith("FROM python:3.11.") for line in dockerfile.splitlines())
    assert 'ENTRYPOINT ["ksched"]' in dockerfile
    assert "requirements.lock" in dockerfile
