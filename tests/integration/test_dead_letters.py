"""``ksched dead-letters`` against the real broker: a poison message shows in ``list``
with its reason, ``replay`` after the fix delivers it where it was going, ``purge``
empties the queue. The command runs as a process, the way an operator runs it."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator, Sequence

import aio_pika
import aiormq
import msgspec
import pytest

from contracts import topology
from services.common.bus import Delivery, Message
from services.common.bus.rabbit import RabbitBus
from tests.builders import make_pod
from tests.integration.harness import AMQP_URL

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

INGEST = topology.QueueSpec("test.ingest", (topology.QueueBinding(topology.EVENTS.name, "pod.*"),))
TAP = topology.QueueSpec(
    "test.dead-tap", (topology.QueueBinding(topology.DEAD.name, ""),), dead_letter=False
)
"""A second queue on ksched.dead: the test waits on it to know a message was dead-lettered."""
WITHIN = 30.0


class Ingest:
    """A consumer that fails on every pod named ``poison-*`` until fixed."""

    def __init__(self) -> None:
        self.fixed = False
        self.taken: list[str] = []
        self.dead: list[str] = []
        self.changed = asyncio.Event()

    async def handle(self, batch: Sequence[Delivery]) -> None:
        names = [json.loads(d.body)["object"]["metadata"]["name"] for d in batch]
        if not self.fixed and any(name.startswith("poison") for name in names):
            raise ValueError("cannot decode poison: unsupported field spec.fancy")
        self.taken.extend(names)
        self.changed.set()

    async def on_dead(self, batch: Sequence[Delivery]) -> None:
        self.dead.extend(json.loads(d.body)["object"]["metadata"]["name"] for d in batch)
        self.changed.set()

    async def wait(self, done: object) -> None:
        async with asyncio.timeout(WITHIN):
            while not done():  # type: ignore[operator]
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
async def bus() -> AsyncIterator[RabbitBus]:
    bus = RabbitBus(AMQP_URL, namespace=f"dl{uuid.uuid4().hex[:8]}")
    try:
        yield bus
    finally:
        names = [INGEST.name, TAP.name, topology.DEAD_LETTERS.name]
        await bus.delete_namespace(names)
        await bus.close()
        # Nothing left behind: a consumer still running while its queue was deleted
        # once had its robust channel declare the queue again.
        assert await leftovers(bus.namespace, names) == []


async def leftovers(namespace: str, names: Sequence[str]) -> list[str]:
    """Which of the namespace's queues ``names`` the broker still has."""
    found = []
    async with await aio_pika.connect(AMQP_URL) as connection:
        for name in names:
            channel = await connection.channel()
            try:
                await channel.declare_queue(f"{namespace}.{name}", passive=True)
                found.append(name)
            except aiormq.exceptions.ChannelNotFoundEntity:
                pass
    return found


async def ksched(namespace: str, *args: str) -> tuple[int, str, str]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli.main", "dead-letters",
        "--amqp-url", AMQP_URL, "--namespace", namespace, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(WITHIN):
        out, err = await child.communicate()
    assert child.returncode is not None
    return child.returncode, out.decode(), err.decode()


def pod_event(name: str) -> Message:
    body = msgspec.json.encode({"type": "ADDED", "object": make_pod(name)})
    return Message(topology.EVENTS.name, "pod.added", body)


async def test_a_poison_message_is_listed_replayed_after_the_fix_and_purged(
    bus: RabbitBus,
) -> None:
    ingest = Ingest()
    await bus.declare([topology.DEAD_LETTERS])
    await bus.consume_raw(TAP, ingest.on_dead)
    await bus.consume_raw(INGEST, ingest.handle, max_batch=1)
    await bus.publish([pod_event("good-1"), pod_event("poison-1"), pod_event("good-2")])
    await ingest.wait(lambda: ingest.dead == ["poison-1"] and len(ingest.taken) == 2)

    code, out, err = await ksched(bus.namespace, "list", "-o", "json")
    assert (code, err.strip()) == (0, "1 dead letter(s)")
    [letter] = [json.loads(line) for line in out.splitlines()]
    assert letter["queue"] == INGEST.name
    assert letter["exchange"] == topology.EVENTS.name
    assert letter["routingKey"] == "pod.added"
    assert letter["reason"] == "ValueError: cannot decode poison: unsupported field spec.fancy"
    assert json.loads(letter["body"])["object"]["metadata"]["name"] == "poison-1"

    code, out, _ = await ksched(bus.namespace, "list")
    assert code == 0
    assert out.splitlines()[1].split()[:4] == [INGEST.name, "pod.added", "ValueError:", "cannot"]

    ingest.fixed = True
    code, out, _ = await ksched(bus.namespace, "replay", "--routing-key", "pod.*")
    assert (code, out) == (0, "replayed 1 dead letter(s)\n")
    await ingest.wait(lambda: "poison-1" in ingest.taken)
    assert ingest.taken == ["good-1", "good-2", "poison-1"]
    code, out, _ = await ksched(bus.namespace, "list", "-o", "json")
    assert (code, out) == (0, "")

    ingest.fixed = False
    await bus.publish([pod_event("poison-2"), pod_event("poison-3")])
    await ingest.wait(lambda: len(ingest.dead) == 3)
    code, out, _ = await ksched(bus.namespace, "purge")
    assert (code, out) == (0, "purged 2 dead letter(s)\n")
    code, out, _ = await ksched(bus.namespace, "list", "-o", "json")
    assert (code, out) == (0, "")


async def test_an_unreachable_broker_is_one_line_without_the_password() -> None:
    code, out, err = await ksched(
        "nobody", "list", "--amqp-url", "amqp://guest:hunter2secret@127.0.0.1:1/"
    )
    assert (code, out) == (3, "")
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("ksched dead-letters: ")
    assert "hunter2secret" not in err
