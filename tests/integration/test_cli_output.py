"""``ksched watch`` against the real RabbitMQ: ``-o yaml`` prints the decision objects as
YAML documents, and a refused login is one line that does not show the password."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from urllib.parse import urlsplit

import aio_pika
import pytest
import yaml

from tests.integration.harness import AMQP_URL, delete_namespace

pytestmark = pytest.mark.integration
KSCHED = [sys.executable, "-m", "services.cli.main"]
BINDING = {
    "apiVersion": "v1",
    "kind": "Binding",
    "metadata": {"name": "web-1", "namespace": "default", "uid": "u-1"},
    "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
}
EVENT = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "web-2.1", "namespace": "default"},
    "reason": "FailedScheduling",
    "message": "0/1 nodes are available: 1 Insufficient cpu.",
}


async def test_watch_prints_decisions_as_yaml_documents() -> None:
    namespace = f"h1yaml{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "KSCHED_AMQP_URL": AMQP_URL, "KSCHED_NAMESPACE": namespace}
    watcher = await asyncio.create_subprocess_exec(
        *KSCHED,
        "watch",
        "-o",
        "yaml",
        "--limit",
        "2",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    connection = await aio_pika.connect_robust(AMQP_URL)
    try:
        assert watcher.stderr is not None and watcher.stdout is not None
        line = await asyncio.wait_for(watcher.stderr.readline(), 30)  # subscribed
        assert b"watching" in line, line
        channel = await connection.channel()
        decisions = await channel.get_exchange(f"{namespace}.ksched.decisions")
        for routing_key, obj in (("binding.default", BINDING), ("event.default", EVENT)):
            body = json.dumps(obj).encode()
            await decisions.publish(aio_pika.Message(body), routing_key=routing_key)
        out = await asyncio.wait_for(watcher.stdout.read(), 30)
        assert await asyncio.wait_for(watcher.wait(), 30) == 0
    finally:
        if watcher.returncode is None:
            watcher.kill()
            await watcher.wait()
        await delete_namespace(connection, namespace)
        await connection.close()
    assert out.decode().startswith("---\n")
    assert list(yaml.safe_load_all(out.decode())) == [BINDING, EVENT]


async def test_a_refused_login_is_one_line_without_the_password() -> None:
    parts = urlsplit(AMQP_URL)
    wrong = parts._replace(
        netloc=f"{parts.username}:not-the-password-h1@{parts.hostname}:{parts.port}"
    ).geturl()
    child = await asyncio.create_subprocess_exec(
        *KSCHED,
        "watch",
        "--amqp-url",
        wrong,
        "--namespace",
        f"h1auth{uuid.uuid4().hex[:8]}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert (child.returncode, out) == (3, b"")
    lines = err.decode().splitlines()
    assert len(lines) == 1, err.decode()
    assert lines[0].startswith(
        f"ksched watch: cannot connect to RabbitMQ at amqp://{parts.username}:***@"
    )
    assert "ACCESS_REFUSED" in lines[0] and "--amqp-url" in lines[0]
    assert "not-the-password-h1" not in lines[0]


async def test_a_missing_virtual_host_is_one_line_naming_it() -> None:
    """aiormq reports it as ``InvalidFrameError ... <Connection.Close object at 0x...>``."""
    vhost = f"ksched-missing-{uuid.uuid4().hex[:8]}"
    child = await asyncio.create_subprocess_exec(
        *KSCHED,
        "watch",
        "--amqp-url",
        urlsplit(AMQP_URL)._replace(path=f"/{vhost}").geturl(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert (child.returncode, out) == (3, b"")
    lines = err.decode().splitlines()
    assert len(lines) == 1, err.decode()
    assert lines[0].endswith(
        f"/{vhost} refused: virtual host '{vhost}' does not exist, or user "
        f"'{urlsplit(AMQP_URL).username}' may not use it (see --amqp-url / KSCHED_AMQP_URL)"
    )
    assert "0x" not in lines[0]
