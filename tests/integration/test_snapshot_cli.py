"""``ksched snapshot`` of the running services, real RabbitMQ and Redis: with the
informer and the queue running and no scheduler yet, a cluster of nodes, bound pods and
pending pods is published; ``ksched snapshot`` (a process, as a user runs it) writes the
store's List and the event log's; then the scheduler and the binder start and bind the
pending pods. ``simulate`` on either file, with the services' seed and configuration,
binds every pending pod where the services did. A log on a stream gives the same List
as the file it was copied from."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aio_pika
import pytest
import yaml

from services.cli.main import main
from services.cli.simulate import load_cluster, simulate
from services.cli.snapshot import SEQ_ANNOTATION, SOURCE_ANNOTATION
from services.common.store.redis import RedisStore
from tests.integration.harness import (
    AMQP_URL,
    REDIS_URL,
    Client,
    Processes,
    delete_namespace,
    node,
    pod,
    until_true,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = 1
"""The seed Processes gives every service (``--seed 1``)."""
SNAPSHOT_TIMEOUT = 60.0
PENDING = [f"e2e/pending-{i}" for i in range(6)]


def cluster() -> list[tuple[str, dict[str, object]]]:
    """Three nodes of different sizes, three pods bound to them, six pending pods whose
    names sort in the order they are published (the queue's order for equal priority)."""
    nodes = [node("big", cpu="8"), node("mid", cpu="4"), node("small", cpu="2")]
    bound = []
    for name, cpu, on in (
        ("bound-1", "3", "big"),
        ("bound-2", "1", "mid"),
        ("bound-3", "1", "small"),
    ):
        p = pod(name, cpu=cpu)
        p["spec"]["nodeName"] = on  # type: ignore[index]
        bound.append(p)
    pending = [
        pod(f"pending-{i}", cpu=cpu) for i, cpu in enumerate(("2", "1", "500m", "3", "250m", "1"))
    ]
    return [("node", n) for n in nodes] + [("pod", p) for p in (*bound, *pending)]


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore]]:
    """The informer and the queue under a namespace of this test's own (the scheduler
    and the binder are the test's to start); everything is removed afterwards."""
    namespace = f"snap{uuid.uuid4().hex[:8]}"
    processes = Processes(namespace, tmp_path)
    connection = await aio_pika.connect_robust(AMQP_URL)
    store = RedisStore(REDIS_URL, namespace=namespace)
    client = Client(connection, namespace)
    try:
        await processes.start("informer")
        await processes.start("queue")
        await client.open()
        yield processes, client, store
    finally:
        try:
            await processes.stop_all()
        finally:
            await delete_namespace(connection, namespace)
            await connection.close()
            await store.flush_namespace()
            await store.close()


async def ksched_snapshot(processes: Processes, target: Path, *flags: str) -> str:
    """Run ``ksched snapshot -o target`` against the test's services; its stderr."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.cli.main",
        "snapshot",
        "-o",
        str(target),
        "--amqp-url",
        processes.amqp_url,
        "--redis-url",
        processes.redis_url,
        "--namespace",
        processes.namespace,
        *flags,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ),
    )
    async with asyncio.timeout(SNAPSHOT_TIMEOUT):
        out, err = await child.communicate()
    assert child.returncode == 0, err.decode()
    assert out == b""
    return err.decode()


def annotations(snapshot: Path) -> dict[str, str]:
    listed: dict[str, dict[str, dict[str, str]]] = yaml.safe_load(snapshot.read_text())
    return listed["metadata"]["annotations"]


async def simulated(snapshot: Path) -> dict[str, str]:
    documents = load_cluster(await asyncio.to_thread(snapshot.read_text), str(snapshot))
    records = await simulate(documents, seed=SEED)
    return {r.pod: r.node for r in records if r.kind == "Binding"}


async def test_simulate_on_a_snapshot_binds_the_pending_pods_as_the_services_then_do(
    services: tuple[Processes, Client, RedisStore], tmp_path: Path
) -> None:
    processes, client, store = services
    objects = cluster()
    for kind, obj in objects:
        await client.publish(kind, obj)

    async def applied() -> bool:
        return await store.applied_seq() >= len(objects)

    await until_true(applied)
    from_store, from_log = tmp_path / "store.yaml", tmp_path / "log.yaml"
    said = await ksched_snapshot(processes, from_store)
    assert "3 nodes, 9 pods (3 bound, 6 pending)" in said
    log = processes.workdir / "events.jsonl"
    await ksched_snapshot(processes, from_log, "--event-log", str(log))
    for path, source in ((from_store, "store"), (from_log, "event-log")):
        assert annotations(path) == {SEQ_ANNOTATION: str(len(objects)), SOURCE_ANNOTATION: source}

    await processes.start("scheduler")
    await processes.start("binder")
    await client.wait_for(lambda: set(client.bindings()) >= set(PENDING), within=60)
    made = {name: targets[0] for name, targets in client.bindings().items()}
    assert all(len(targets) == 1 for targets in client.bindings().values())
    assert set(made) == set(PENDING)

    assert await simulated(from_store) == made
    assert await simulated(from_log) == made


async def _delete_streams(namespace: str, name: str) -> None:
    async with await aio_pika.connect(AMQP_URL) as connection:
        channel = await connection.channel()
        for suffix in ("", ".fences", ".snapshots"):
            await channel.queue_delete(f"{namespace}.{name}{suffix}")


@pytest.fixture
def stream_namespace(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A namespace of this test's own for ``stream://runs``, deleted afterwards."""
    namespace = f"snap{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("KSCHED_AMQP_URL", AMQP_URL)
    monkeypatch.setenv("KSCHED_NAMESPACE", namespace)
    yield namespace
    asyncio.run(_delete_streams(namespace, "runs"))


def test_a_log_on_a_stream_gives_the_list_of_its_file(
    stream_namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given, record = tmp_path / "cluster.yaml", tmp_path / "run.jsonl"
    given.write_text(yaml.safe_dump_all([obj for _, obj in cluster()]))
    assert main(["simulate", str(given), "--record", str(record), "-o", "json"]) == 0
    assert main(["log", "copy", str(record), "stream://runs"]) == 0
    capsys.readouterr()
    assert main(["snapshot", "--event-log", str(record)]) == 0
    from_file = capsys.readouterr().out
    assert main(["snapshot", "--event-log", "stream://runs"]) == 0
    assert capsys.readouterr().out == from_file
    assert from_file.count("nodeName:") == 9  # every pod bound by the recorded run
