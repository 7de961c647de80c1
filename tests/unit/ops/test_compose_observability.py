"""compose.yaml watches the services: each serves its metrics and health on its default
port, Prometheus scrapes them all, Grafana shows the dashboard, and every image is pinned
to an exact version."""

from __future__ import annotations

import re
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
PROMETHEUS_CONFIG = ROOT / "ops" / "prometheus" / "prometheus.yml"
GRAFANA = ROOT / "ops" / "grafana"

# The documented defaults of `ksched run NAME --metrics-port`.
DEFAULT_PORTS = {
    "informer": 10260,
    "queue": 10261,
    "scheduler": 10262,
    "binder": 10263,
    "descheduler": 10264,
}
EXACT_TAG = re.compile(r"v?\d+\.\d+\.\d+(?:-[A-Za-z0-9.-]+)?")


def _container_ports(service: dict[str, Any]) -> set[int]:
    """Container-side ports of ``ports`` entries ("H:C", "IP:H:C", "C/tcp" or long form)."""
    ports: set[int] = set()
    for entry in service.get("ports", []):
        if isinstance(entry, dict):
            ports.add(int(entry["target"]))
        else:
            ports.add(int(str(entry).split("/")[0].rsplit(":", 1)[-1]))
    return ports


def _bind_mounts(service: dict[str, Any]) -> dict[str, Path]:
    """Container path → host path of the service's bind mounts of this tree."""
    mounts: dict[str, Path] = {}
    for volume in service.get("volumes", []):
        source, target, *_ = str(volume).split(":")
        if source.startswith("."):
            mounts[target] = ROOT / source
    return mounts


def _flag(command: list[str], flag: str) -> str:
    """The value of ``--flag VALUE`` or ``--flag=VALUE`` in a command."""
    for i, word in enumerate(command):
        if word == flag:
            return command[i + 1]
        if word.startswith(f"{flag}="):
            return word.split("=", 1)[1]
    raise AssertionError(f"{flag} not in {command}")


def test_the_default_ports_are_the_services() -> None:
    from services.common.observe import DEFAULT_PORTS as SERVICE_DEFAULTS

    assert dict(SERVICE_DEFAULTS) == DEFAULT_PORTS


@pytest.mark.parametrize(("name", "port"), DEFAULT_PORTS.items())
def test_every_service_serves_metrics_on_its_default_port(name: str, port: int) -> None:
    command = SERVICES[name]["command"]
    assert command[:2] == ["run", name]
    assert int(_flag(command, "--metrics-port")) == port


@pytest.mark.parametrize(("name", "port"), DEFAULT_PORTS.items())
def test_every_service_is_healthy_when_ready(
    name: str, port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The healthcheck asks /readyz on the metrics port with the image's Python (the
    image has no curl); urlopen raises on an error status, so a 503 is unhealthy."""
    healthcheck = SERVICES[name]["healthcheck"]
    test = healthcheck["test"]
    assert test[:3] == ["CMD", "python", "-c"], "python:3.11-slim has python, not curl"
    dockerfile = (ROOT / "ops" / "Dockerfile").read_text()
    assert re.search(r"^FROM python:", dockerfile, flags=re.M)

    asked: list[str] = []

    def urlopen(url: str, timeout: float) -> None:
        asked.append(url)
        assert timeout < float(str(healthcheck["timeout"]).removesuffix("s"))

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    exec(compile(test[3], f"<{name} healthcheck>", "exec"), {})
    assert asked == [f"http://127.0.0.1:{port}/readyz"], f"{name}'s healthcheck asks {asked}"


IMAGES = sorted(n for n, s in SERVICES.items() if "image" in s)


def test_the_infrastructure_runs_from_images() -> None:
    """The pinning test below runs once per image: an empty list would check nothing."""
    assert {"rabbitmq", "redis", "jaeger", "prometheus", "grafana"} <= set(IMAGES)


@pytest.mark.parametrize("name", IMAGES)
def test_images_are_pinned_to_exact_versions(name: str) -> None:
    image = SERVICES[name]["image"]
    repository, _, tag = image.partition("@")[0].rpartition(":")
    assert repository and "/" not in tag, f"{name}: {image} has no tag"
    assert EXACT_TAG.fullmatch(tag), f"{name}: {image} is not an exact version"


def test_prometheus_serves_on_9090_with_the_ops_config() -> None:
    prometheus = SERVICES["prometheus"]
    assert prometheus["image"].startswith("prom/prometheus:v3.")
    assert 9090 in _container_ports(prometheus)
    config = _flag(prometheus["command"], "--config.file")
    assert _bind_mounts(prometheus)[config] == PROMETHEUS_CONFIG
    assert "/-/ready" in " ".join(prometheus["healthcheck"]["test"])


def test_prometheus_scrapes_every_service_at_its_default_port_every_5s() -> None:
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    scraped: dict[str, set[tuple[str, int]]] = {}
    for job in config["scrape_configs"]:
        targets = scraped.setdefault(job["job_name"], set())
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                host, _, port = target.rpartition(":")
                targets.add((host, int(port)))
        for dns in job.get("dns_sd_configs", []):
            assert dns.get("type", "SRV") == "A", "compose's DNS answers A records"
            targets |= {(host, int(dns["port"])) for host in dns["names"]}
        interval = job.get("scrape_interval", config["global"]["scrape_interval"])
        assert interval == "5s", job["job_name"]
    for name, port in DEFAULT_PORTS.items():
        assert scraped.get(name) == {(name, port)}, f"job {name} scrapes {scraped.get(name)}"
        assert name in SERVICES


def test_promtool_accepts_the_prometheus_config() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian's prometheus package; .ci/run installs it)")
    result = subprocess.run(
        [promtool, "check", "config", "--syntax-only", str(PROMETHEUS_CONFIG)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_grafana_serves_the_dashboard_to_anonymous_viewers_on_3000() -> None:
    grafana = SERVICES["grafana"]
    assert grafana["image"].startswith("grafana/grafana:12.")
    assert 3000 in _container_ports(grafana)
    env = {str(k): str(v) for k, v in grafana["environment"].items()}
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    assert grafana["depends_on"]["prometheus"]["condition"] == "service_healthy"

    mounts = _bind_mounts(grafana)
    provisioning = GRAFANA / "provisioning"
    assert mounts["/etc/grafana/provisioning/datasources"] == provisioning / "datasources"
    assert mounts["/etc/grafana/provisioning/dashboards"] == provisioning / "dashboards"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "ksched.yaml").read_text())[
        "providers"
    ]
    dashboards = provider["options"]["path"]
    assert mounts[dashboards] == GRAFANA / "dashboards"
    home = Path(env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    assert (GRAFANA / "dashboards" / home.relative_to(dashboards)).is_file()

    (datasource,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yaml").read_text())[
        "datasources"
    ]
    host, port = datasource["url"].removeprefix("http://").split(":")
    assert host in SERVICES and int(port) in _container_ports(SERVICES[host])


def test_every_bind_mount_exists() -> None:
    mounts = [
        (name, target, source)
        for name, service in SERVICES.items()
        for target, source in _bind_mounts(service).items()
    ]
    assert mounts, "compose.yaml bind-mounts nothing of this tree"
    missing = [f"{n} mounts missing {s} at {t}" for n, t, s in mounts if not s.exists()]
    assert not missing
