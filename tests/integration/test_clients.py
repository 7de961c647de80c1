"""The README's client paths against running services: the plain aio-pika example,
``ksched publish`` and ``ksched watch``."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import uuid
from pathlib import Path

import aio_pika
import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import AMQP_URL, REDIS_URL, Client, Processes, delete_namespace

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "ops" / "examples" / "publish_pod.py"


async def run(
    *command: str, env: dict[str, str], stdin: bytes | None = None
) -> tuple[int, str, str]:
    child = await asyncio.create_subprocess_exec(
        *command,
        env={**os.environ, **env},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(stdin), 60)
    assert child.returncode is not None
    return child.returncode, out.decode(), err.decode()


def test_the_readme_shows_the_example_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert EXAMPLE.read_text() in blocks


async def test_plain_aio_pika_example_gets_its_binding(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    processes, _, _ = cluster
    env = {"KSCHED_AMQP_URL": AMQP_URL, "KSCHED_NAMESPACE": processes.namespace}
    code, out, err = await run(sys.executable, str(EXAMPLE), env=env)
    assert code == 0, err
    assert out.strip() == "hello bound to worker-1"


async def test_ksched_publish_and_watch(cluster: tuple[Processes, Client, RedisStore]) -> None:
    processes, client, _ = cluster
    env = {"KSCHED_NAMESPACE": processes.namespace, "KSCHED_AMQP_URL": AMQP_URL}
    ksched = [sys.executable, "-m", "services.cli.main"]
    watcher = await asyncio.create_subprocess_exec(
        *ksched,
        "watch",
        "--limit",
        "2",
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert watcher.stderr is not None and watcher.stdout is not None
    line = await asyncio.wait_for(watcher.stderr.readline(), 30)  # subscribed
    assert b"watching" in line
    manifest = (
        b"kind: Node\nmetadata: {name: w1}\nstatus: {allocatable: {cpu: '2', pods: '5'}}\n---\n"
        b"kind: Pod\nmetadata: {name: from-cli, namespace: cli}\nspec: {containers: [{name: c}]}\n"
    )
    code, _, err = await run(*ksched, "publish", "-", env=env, stdin=manifest)
    assert code == 0, err
    await client.wait_for(lambda: "cli/from-cli" in client.bindings())
    out = await asyncio.wait_for(watcher.stdout.read(), 30)
    assert await watcher.wait() == 0
    kinds = sorted(json.loads(line)["kind"] for line in out.decode().splitlines())
    assert kinds == ["Binding", "Event"]  # the Binding and the Scheduled event


async def test_ksched_up_runs_every_service_and_stops_on_sigterm(tmp_path: Path) -> None:
    namespace = f"up{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "KSCHED_NAMESPACE": namespace,
        "KSCHED_AMQP_URL": AMQP_URL,
        "KSCHED_REDIS_URL": REDIS_URL,
        "KSCHED_EVENT_LOG": str(tmp_path / "events.jsonl"),
    }
    up = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "services.cli.main", "up", "--metrics-port", "0"),
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    assert up.stderr is not None
    started: set[str] = set()
    try:
        async with asyncio.timeout(60):
            while len(started) < 4:
                line = (await up.stderr.readline()).decode()
                assert line, "ksched up exited early"
                started |= {
                    n
                    for n in ("informer", "queue", "scheduler", "binder")
                    if f"{n} started" in line
                }
        code, out, err = await run(sys.executable, str(EXAMPLE), env=env)
        assert code == 0, err
        assert out.strip() == "hello bound to worker-1"
    finally:
        up.terminate()
        assert await asyncio.wait_for(up.wait(), 30) == 0
        store = RedisStore(REDIS_URL, namespace=namespace)
        await store.flush_namespace()
        await store.close()
        connection = await aio_pika.connect_robust(AMQP_URL)
        await delete_namespace(connection, namespace)
        await connection.close()
