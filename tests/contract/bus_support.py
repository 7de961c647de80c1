"""Builders and doubles of the Bus contract suite (test_bus.py) and of the backends' own
tests (test_bus_backends.py): queues and messages, a recording handler, and the buses of
one kind that share one broker."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from uuid import uuid4

import aio_pika
import aiormq

from contracts import topology as t
from services.common.bus import Bus, Delivery, MemoryBus, Message, Rejection
from services.common.bus.rabbit import RabbitBus

AMQP_URL = os.environ.get("KSCHED_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
DEADLINE = 10.0
PAUSE = 0.01
"""The buses' first pause before giving back a batch whose handler found the broker
or Redis unavailable (doubling), small so these tests do not wait."""


def queue(name: str, exchange: str = t.EVENTS.name, key: str = "#") -> t.QueueSpec:
    return t.QueueSpec(f"test.{name}", (t.QueueBinding(exchange, key),))


def events(*bodies: str, exchange: str = t.EVENTS.name, key: str = "pod.added") -> list[Message]:
    return [Message(exchange, key, body.encode()) for body in bodies]


class Recorder:
    """A batch handler that records what it sees. ``behaviour`` may block, raise or
    return rejections; by default it accepts everything."""

    def __init__(
        self,
        behaviour: Callable[[Sequence[Delivery]], object] | None = None,
    ) -> None:
        self.deliveries: list[Delivery] = []
        self.batches: list[int] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self._behaviour = behaviour
        self._changed = asyncio.Event()

    @property
    def bodies(self) -> list[str]:
        return [d.body.decode() for d in self.deliveries]

    async def __call__(self, batch: Sequence[Delivery]) -> Sequence[Rejection] | None:
        self.batches.append(len(batch))
        self.deliveries.extend(batch)
        self._changed.set()
        await self.gate.wait()
        outcome = self._behaviour(batch) if self._behaviour else None
        return outcome if isinstance(outcome, list) else None

    async def wait_for(self, done: Callable[[Recorder], bool]) -> None:
        async with asyncio.timeout(DEADLINE):
            while not done(self):
                self._changed.clear()
                await self._changed.wait()

    async def wait_body(self, body: str) -> None:
        await self.wait_for(lambda r: body in r.bodies)


class Backend:
    """Opens buses of one kind that share one broker (one namespace)."""

    def __init__(self, kind: str) -> None:
        self.quorum = kind == "rabbit-quorum"
        """Durable queues declared quorum (KSCHED_QUEUE_TYPE=quorum), on the real broker."""
        self.kind = "rabbit" if self.quorum else kind
        self.namespace = f"t{uuid4().hex[:8]}"
        self._buses: list[Bus] = []
        self._memory = MemoryBus(unavailable_pause=PAUSE)

    async def open(self, url: str = AMQP_URL) -> Bus:
        if self.kind == "memory":
            return self._memory
        bus = RabbitBus(url, namespace=self.namespace, unavailable_pause=PAUSE, quorum=self.quorum)
        self._buses.append(bus)
        return bus

    async def reconnect(self, bus: Bus) -> Bus:
        """A new connection to the same broker (the memory bus *is* the broker)."""
        if self.kind == "memory":
            return bus
        await bus.close()
        return await self.open()

    async def queue_exists(self, name: str) -> bool:
        if self.kind == "memory":
            try:
                self._memory.queue_depth(name)
            except KeyError:
                return False
            return True
        async with await aio_pika.connect(AMQP_URL) as connection:
            channel = await connection.channel()
            try:
                await channel.declare_queue(f"{self.namespace}.{name}", passive=True)
            except aiormq.exceptions.ChannelNotFoundEntity:
                return False
            except aiormq.exceptions.ChannelLockedResource:
                return True  # exclusive to the bus's connection: it exists
            return True

    async def aclose(self) -> None:
        await self._memory.close()
        for bus in self._buses:
            await bus.close()
        if self.kind == "rabbit":
            cleaner = RabbitBus(AMQP_URL, namespace=self.namespace)
            await cleaner.delete_namespace([q.name for q in t.QUEUES] + TEST_QUEUES)
            await cleaner.close()


TEST_QUEUES = [f"test.{n}" for n in ("a", "b", "c", "d", "q", "direct", "binding")]
