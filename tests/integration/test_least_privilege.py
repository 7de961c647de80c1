"""The least-privilege users of ops/: enough for each service, nothing more.

A throwaway vhost with the generated definitions (users with test-only names), Redis ACL
users under the test's namespace; the four services run as processes, each as its own
user on both edges, and schedule pods end to end. Then each user is shown what it may
not do. Everything created here is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aio_pika
import aiormq
import pytest
import redis.asyncio as aioredis
import redis.exceptions

from contracts import topology as t
from services.common.bus import BusError, open_bus
from services.common.privileges import SERVICES, rabbitmq_definitions, redis_acl
from services.common.store.redis import RedisStore
from tests.integration.harness import REDIS_URL, Client, Processes, node, pod

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-" + uuid.uuid4().hex


async def rabbitmqctl(*args: str, check: bool = True) -> None:
    binary = shutil.which("rabbitmqctl") or pytest.skip("rabbitmqctl is not installed")
    child = await asyncio.create_subprocess_exec(
        binary,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    async with asyncio.timeout(60):
        output, _ = await child.communicate()
    if check and child.returncode != 0:
        raise AssertionError(f"rabbitmqctl {' '.join(args)}: {output.decode()}")


@dataclass
class Sandbox:
    vhost: str
    namespace: str
    users: str

    def amqp_url(self, service: str) -> str:
        return f"amqp://{self.users}{service}:{PASSWORD}@127.0.0.1:5672/{self.vhost}"

    def redis_url(self, service: str) -> str:
        return REDIS_URL.replace("redis://", f"redis://{self.users}{service}:{PASSWORD}@")

    @property
    def admin_url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:5672/{self.vhost}"


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    tag = uuid.uuid4().hex[:8]
    box = Sandbox(vhost=f"ksched-lp-{tag}", namespace=f"lp{tag}", users=f"lp{tag}-")
    definitions = json.dumps(rabbitmq_definitions(box.vhost, box.namespace, box.users))
    admin = aioredis.from_url(REDIS_URL)
    await rabbitmqctl("add_vhost", box.vhost)
    try:
        await rabbitmqctl("set_permissions", "-p", box.vhost, "guest", ".*", ".*", ".*")
        # rabbitmqctl reads the file as the rabbitmq user: a world-readable copy in /tmp
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir="/tmp") as file:
            file.write(definitions)
            file.flush()
            os.fchmod(file.fileno(), 0o644)
            await rabbitmqctl("import_definitions", file.name)
        for service in SERVICES:
            await rabbitmqctl("change_password", box.users + service, PASSWORD)
        for line in redis_acl(box.namespace, users=box.users, password=PASSWORD).splitlines():
            await admin.execute_command("ACL", "SETUSER", *line.split()[1:])
        yield box
    finally:
        for service in SERVICES:
            await admin.execute_command("ACL", "DELUSER", box.users + service)
            await rabbitmqctl("delete_user", box.users + service, check=False)
        await rabbitmqctl("delete_vhost", box.vhost)
        store = RedisStore(REDIS_URL, namespace=box.namespace)
        await store.flush_namespace()
        await store.close()
        await admin.aclose()


class LeastPrivilegeProcesses(Processes):
    """Each service process connects as its own user on both edges."""

    def __init__(self, box: Sandbox, workdir: Path) -> None:
        super().__init__(box.namespace, workdir)
        self.box = box
        self._service = ""

    def flags(self) -> list[str]:
        flags = super().flags()
        flags[flags.index("--amqp-url") + 1] = self.box.amqp_url(self._service)
        flags[flags.index("--redis-url") + 1] = self.box.redis_url(self._service)
        return flags

    async def start(self, name: str) -> None:
        self._service = name
        await super().start(name)


async def test_the_services_schedule_as_their_own_least_privileged_users(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    processes = LeastPrivilegeProcesses(sandbox, tmp_path)
    connection = await aio_pika.connect_robust(sandbox.admin_url)
    client = Client(connection, sandbox.namespace)
    try:
        for name in ("informer", "queue", "scheduler", "binder"):
            await processes.start(name)
        await client.open()
        await client.publish("node", node("node-1"))
        for i in range(5):
            await client.publish("pod", pod(f"p{i}"))
        await client.wait_for(lambda: len(client.bindings()) == 5)
        assert client.errors == []
        assert "ACCESS_REFUSED" not in "".join(processes.log(n) for n in SERVICES)
        assert "NOPERM" not in "".join(processes.log(n) for n in SERVICES)
    finally:
        await processes.stop_all()
        await connection.close()


async def _ignore(message: aio_pika.abc.AbstractIncomingMessage) -> None:
    raise AssertionError(f"the binder user consumed {message.routing_key}")


async def test_a_service_user_cannot_touch_another_services_queues_or_exchanges(
    sandbox: Sandbox,
) -> None:
    prefix = f"{sandbox.namespace}."
    connection = await aio_pika.connect(sandbox.amqp_url("binder"))
    try:
        channel = await connection.channel()
        queue = await channel.declare_queue(prefix + t.INFORMER_EVENTS.name, passive=True)
        with pytest.raises(aiormq.exceptions.ChannelAccessRefused):
            await queue.consume(_ignore)
        channel = await connection.channel()
        with pytest.raises(aiormq.exceptions.ChannelAccessRefused):
            await channel.queue_delete(prefix + t.INFORMER_EVENTS.name)
        channel = await connection.channel(publisher_confirms=True)
        cluster = await channel.get_exchange(prefix + t.CLUSTER.name)
        with pytest.raises(
            (aiormq.exceptions.ChannelAccessRefused, aio_pika.exceptions.ChannelInvalidStateError)
        ):
            await cluster.publish(aio_pika.Message(b"{}"), "")
    finally:
        await connection.close()


async def test_the_bus_of_a_user_without_configure_rights_declares_passively(
    sandbox: Sandbox,
) -> None:
    bus = open_bus(sandbox.amqp_url("queue"), namespace=sandbox.namespace)
    try:
        await bus.declare(t.QUEUES)  # others' queues exist (definitions): passive
        await bus.declare([t.scheduler_cluster_queue("not-mine")])
        pytest.fail("the queue user declared a scheduler feed")
    except BusError as error:
        assert "scheduler.cluster.not-mine" in str(error)
        assert PASSWORD not in str(error)
    finally:
        await bus.close()


@pytest.mark.parametrize(
    ("service", "command"),
    [
        ("binder", ("SET", "{ns}:seq", "0")),  # the log position is the informer's to write
        ("queue", ("HINCRBY", "{ns}:usage:n1", "cpu", "1")),  # usage is the scripts' to write
        ("informer", ("GET", "other:seq")),
        ("scheduler", ("FLUSHALL",)),
    ],
)
async def test_a_service_redis_user_has_only_its_commands_and_keys(
    sandbox: Sandbox, service: str, command: tuple[str, ...]
) -> None:
    client = aioredis.from_url(sandbox.redis_url(service))
    try:
        with pytest.raises(redis.exceptions.NoPermissionError):
            await client.execute_command(*(c.format(ns=sandbox.namespace) for c in command))
    finally:
        await client.aclose()


def test_the_checked_in_files_are_the_generated_ones() -> None:
    definitions = json.loads((ROOT / "ops/rabbitmq/definitions.json").read_text())
    assert definitions == rabbitmq_definitions()
    assert (ROOT / "ops/redis/users.acl").read_text() == redis_acl()
