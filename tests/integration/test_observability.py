"""What the services show of themselves, against the real RabbitMQ and Redis: after an
end-to-end run every service's ``/metrics`` agrees with what happened (upstream's names
and labels), ``/readyz`` and ``/livez`` pass, every metric the dashboard names is
exported, a real Prometheus scrapes them (where Debian's ``prometheus`` is installed),
and ``/readyz`` fails while the broker is down and passes again once it is back."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.common.store.redis import RedisStore
from tests.integration.harness import REDIS_URL, Client, Processes, node, pod, running_cluster
from tests.integration.private_servers import RabbitNode, free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
EXPORTED = ROOT / "ops" / "grafana" / "exported-metrics.txt"
SERVICES = ("informer", "queue", "scheduler", "binder", "descheduler")
POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: taints
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
"""
PORT_LINE = re.compile(r"serves /metrics, /healthz, /livez, /readyz on port (\d+)")


def port_of(processes: Processes, key: str) -> int:
    found = PORT_LINE.findall(processes.log(key))
    assert found, f"{key} did not say its metrics port:\n{processes.log(key)}"
    return int(found[-1])


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(port: int) -> tuple[set[str], Samples]:
    """The families (base names) and every sample of one service."""
    status, text = await asyncio.to_thread(get, port, "/metrics")
    assert status == 200, text
    names: set[str] = set()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return names, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


async def until(check: Callable[[], Any], within: float = 60.0) -> None:
    """Until the async ``check()`` holds; polled, bounded."""
    async with asyncio.timeout(within):
        while not await check():  # noqa: ASYNC110 (HTTP state: nothing to wait on)
            await asyncio.sleep(0.2)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore]]:
    async for running in running_cluster(tmp_path, "obs", "--metrics-port", "0"):
        yield running


async def test_every_service_reports_what_happened(
    cluster: tuple[Processes, Client, RedisStore], tmp_path: Path
) -> None:
    processes, client, _store = cluster
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    await processes.start(
        "descheduler", "--policy", str(policy), "--interval", "1h", "--metrics-port", "0"
    )
    for i in range(3):
        await client.publish("node", node(f"n{i}", cpu="4"))
    for i in range(19):
        await client.publish("pod", pod(f"p{i}", cpu="100m"))
    await client.publish("pod", pod("huge", cpu="64"))
    await client.wait_for(lambda: len(client.bindings()) >= 19)
    ports = {name: port_of(processes, name) for name in SERVICES}

    # The queue parks the huge pod; nothing else stays pending.
    async def settled() -> bool:
        _, samples = await scrape(ports["queue"])
        return (
            value(samples, "scheduler_pending_pods", queue="active") == 0
            and value(samples, "scheduler_pending_pods", queue="unschedulable")
            + value(samples, "scheduler_pending_pods", queue="backoff")
            == 1
        )

    await until(settled)
    scraped = {name: await scrape(port) for name, port in ports.items()}
    binder = scraped["binder"][1]
    scheduler = scraped["scheduler"][1]
    queue = scraped["queue"][1]
    informer = scraped["informer"][1]

    profile = {"profile": "default-scheduler"}
    assert value(binder, "scheduler_schedule_attempts_total", result="scheduled", **profile) == 19
    assert total(binder, "scheduler_scheduling_attempt_duration_seconds_count") == 19
    assert value(binder, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 19
    assert value(binder, "scheduler_pod_scheduling_attempts_count") == 19
    assert total(binder, "scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="Bind", status="Success") == 19  # fmt: skip

    unschedulable = value(
        scheduler, "scheduler_schedule_attempts_total", result="unschedulable", **profile
    )
    assert unschedulable >= 1
    assert value(scheduler, "scheduler_scheduling_algorithm_duration_seconds_count") >= 20
    assert total(scheduler, "scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="Filter") >= 20  # fmt: skip
    assert total(scheduler, "scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="Reserve", status="Success") >= 19  # fmt: skip
    assert total(scheduler, "scheduler_plugin_evaluation_total",
                 plugin="NodeResourcesFit", extension_point="Filter") >= 20 * 3 - 2  # fmt: skip
    balanced = {"plugin": "NodeResourcesBalancedAllocation", "extension_point": "Score"}
    assert total(scheduler, "scheduler_plugin_evaluation_total", **balanced) >= 19
    assert total(scheduler, "scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="Score") >= 19  # fmt: skip
    assert value(scheduler, "scheduler_cache_size", type="nodes") == 3
    assert value(scheduler, "scheduler_cache_size", type="pods") == 19

    assert value(queue, "scheduler_unschedulable_pods", plugin="NodeResourcesFit",
                 profile="default-scheduler") == 1  # fmt: skip
    assert total(queue, "scheduler_queue_incoming_pods_total", queue="active") >= 20
    assert total(queue, "scheduler_queue_incoming_entities_total", queue="active", type="pod") >= 20
    assert value(queue, "scheduler_queued_entities", queue="active", type="pod") == 0
    assert value(queue, "scheduler_inflight_events", event="PodPopped") == 0
    assert total(queue, "scheduler_event_handling_duration_seconds_count", event="NodeAdd") == 3

    assert value(informer, "ksched_event_log_bytes") > 0
    assert value(informer, "ksched_event_log_fsync_duration_seconds_count") > 0
    for name, (_, samples) in scraped.items():
        assert value(samples, "ksched_broker_connected") == 1, (name, get(ports[name], "/readyz"))
        assert value(samples, "ksched_redis_connected") == 1, name
        assert total(samples, "ksched_redis_call_duration_seconds_count") > 0, name
        assert total(samples, "process_resident_memory_bytes") > 0, name
        assert total(samples, "ksched_messages_published_total") > 0 or name == "descheduler"

    for name, port in ports.items():
        for path in ("/readyz", "/livez", "/healthz"):
            status, text = await asyncio.to_thread(get, port, path)
            assert status == 200, (name, path, text)
            assert text.rstrip().endswith(f"{path.strip('/')} check passed"), text

    # Every metric the dashboard may name is exported by some service.
    exported = set().union(*(names for names, _ in scraped.values()))
    listed = {
        line.strip()
        for line in EXPORTED.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    stripped = {re.sub(r"_total$", "", n) for n in listed}
    assert stripped - exported == set()

    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.skip("Debian's prometheus is not installed here: the scrape by a real server")
    await scraped_by_prometheus(prometheus, tmp_path, ports)


async def scraped_by_prometheus(binary: str, workdir: Path, ports: dict[str, int]) -> None:
    """A real Prometheus scrapes every service; a PromQL query returns the binder's
    ``scheduled`` attempts."""
    targets = [f"127.0.0.1:{p}" for p in ports.values()]
    config = workdir / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s}\n"
        "scrape_configs:\n"
        f"- job_name: ksched\n  static_configs: [{{targets: {json.dumps(targets)}}}]\n"
    )
    port = free_port()
    log = (workdir / "prometheus.log").open("w")
    server = await asyncio.create_subprocess_exec(
        binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        query = urllib.parse.quote('scheduler_schedule_attempts_total{result="scheduled"}')

        async def answered() -> bool:
            try:
                status, text = await asyncio.to_thread(get, port, f"/api/v1/query?query={query}")
            except OSError:
                return False
            if status != 200:
                return False
            result = json.loads(text)["data"]["result"]
            return bool(result) and float(result[0]["value"][1]) == 19

        await until(answered, within=90)
    finally:
        server.terminate()
        try:
            async with asyncio.timeout(10):
                await server.wait()
        except TimeoutError:
            server.kill()
            await server.wait()
        log.close()


async def test_readiness_follows_the_broker(tmp_path: Path) -> None:
    """``/readyz`` fails naming the broker while it is down, passes again once it is
    back; ``/livez`` passes throughout (the loop turns)."""
    broker = RabbitNode(tmp_path)
    broker.start()
    processes = Processes("obsrd", tmp_path, amqp_url=broker.url, redis_url=REDIS_URL)
    try:
        await processes.start("informer", "--metrics-port", "0")
        port = port_of(processes, "informer")

        async def ready(expected: int) -> bool:
            status, _ = await asyncio.to_thread(get, port, "/readyz")
            return status == expected

        await until(lambda: ready(200))
        broker.stop()
        await until(lambda: ready(503))
        _, text = await asyncio.to_thread(get, port, "/readyz")
        assert "[-]broker failed" in text and "readyz check failed" in text, text
        assert (await asyncio.to_thread(get, port, "/livez"))[0] == 200
        broker.start()
        await until(lambda: ready(200), within=90)
    finally:
        await processes.stop_all()
        broker.stop()
        store = RedisStore(REDIS_URL, namespace="obsrd")
        await store.flush_namespace()
        await store.close()
