"""A RabbitBus consumer's task ends only when the consumer is cancelled. A CancelledError
met by the handler (aiormq rejects a closing channel's futures, a publish confirmation
among them, with one) or any failure outside the handler once ended it silently: aio-pika
kept restoring the subscription after each reconnection, and nothing was consumed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from contracts import topology
from services.common.bus import Delivery
from services.common.bus.rabbit_consume import RabbitConsumer


class FakeMessage:
    def __init__(self, n: int) -> None:
        self.body = b"{}"
        self.exchange = "ksched.events"
        self.routing_key = f"pod.added.{n}"
        self.headers: dict[str, Any] = {}
        self.redelivered = False
        self.message_id: str | None = None
        self.delivery_tag = n + 1
        self.channel = SimpleNamespace(is_closed=False)
        self.settled: list[str] = []

    async def ack(self, multiple: bool = False) -> None:
        self.settled.append("ack")

    async def nack(self, multiple: bool = False, requeue: bool = True) -> None:
        self.settled.append("nack")


async def test_the_loop_outlives_a_stray_cancelled_error_and_any_failure() -> None:
    bus: Any = SimpleNamespace(unavailable_pause=0.001, broker_name=lambda n: n, _consumers=[])
    handled: list[str] = []

    async def handler(deliveries: Sequence[Delivery]) -> None:
        key = deliveries[0].routing_key
        if key.endswith(".0"):
            raise asyncio.CancelledError  # a confirmation rejected by a closing channel
        if key.endswith(".1"):
            raise RuntimeError("boom")
        handled.append(key)

    consumer = RabbitConsumer(
        bus, topology.INFORMER_EVENTS, Any, Any, handler, max_batch=1, prefetch=2
    )
    bus._consumers.append(consumer)
    consumer._task = asyncio.create_task(consumer._run())
    messages = [FakeMessage(n) for n in range(3)]
    for m in messages:
        await consumer._on_message(m)  # type: ignore[arg-type]
    for _ in range(1000):
        if handled:
            break
        await asyncio.sleep(0.001)

    assert handled == ["pod.added.2"]
    assert messages[0].settled == ["nack"]  # given back, not left holding a prefetch slot
    assert messages[2].settled[0] == "ack"
    assert consumer.held == 0
    assert not consumer._task.done()
    consumer._task.cancel()
    await asyncio.wait([consumer._task])
    assert consumer._task.cancelled()
