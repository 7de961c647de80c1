"""What one Bus backend does beyond the shared contract (test_bus.py): MemoryBus's
``wait_idle``, and RabbitBus's message-by-message publish when aiormq lacks what its
batched write uses."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from contracts import topology as t
from services.common.bus import BusRefused, Delivery, MemoryBus, Message
from services.common.bus.rabbit import RabbitBus
from tests.contract.broker_proxy import broker_proxy
from tests.contract.bus_support import AMQP_URL, DEADLINE, Backend, Recorder, events, queue

pytestmark = pytest.mark.timeout(60)


async def test_memory_wait_idle_returns_when_the_pipeline_has_quiesced() -> None:
    bus = MemoryBus()
    first, second = queue("a", t.EVENTS.name), queue("b", t.SCHEDULE.name, t.SCHEDULE_KEY)
    await bus.declare([t.DEAD_LETTERS])  # nobody consumes it: must not keep wait_idle waiting
    got = Recorder()

    async def forward(batch: Sequence[Delivery]) -> None:
        await asyncio.sleep(0)
        await bus.publish([Message(t.SCHEDULE.name, t.SCHEDULE_KEY, d.body) for d in batch])

    await bus.consume_raw(first, forward)
    await bus.consume_raw(second, got)
    await bus.publish(events("1", "2"))
    await bus.publish(events("dead", exchange=t.DEAD.name))
    async with asyncio.timeout(DEADLINE):
        await bus.wait_idle()
    assert got.bodies == ["1", "2"]
    assert bus.queue_depth(t.DEAD_LETTERS.name) == 1
    await bus.close()


@pytest.mark.integration
async def test_rabbit_publishes_message_by_message_without_aiormqs_internals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An aiormq whose Channel lacks what the batched write uses: the same messages go
    out one by one (aio-pika's way), in order."""
    from services.common.bus import rabbit_write

    monkeypatch.setattr(rabbit_write, "CHANNEL_INTERNALS", ("no_such_attribute",))
    backend = Backend("rabbit")
    try:
        bus = await backend.open()
        got = Recorder()
        await bus.consume_raw(queue("q"), got)
        bodies = [f"m{i}" for i in range(5)]
        await bus.publish(events(*bodies))
        await got.wait_for(lambda r: len(r.deliveries) == len(bodies))
        assert got.bodies == bodies
        with pytest.raises(BusRefused, match=r"(?i)too long"):
            await bus.publish(events("x", key="pod." + "k" * 300))
    finally:
        await backend.aclose()


LOST = ("lost the broker connection", "CHANNEL_ERROR")
"""What the bus and aiormq log when the broker closes the connection."""


@pytest.mark.integration
@pytest.mark.parametrize("closing", ["consumer", "fetch"])
async def test_rabbit_a_channel_close_confirmed_late_costs_no_connection(
    closing: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The broker's confirmation of a channel's close arrives after the bus stopped
    waiting for it (a loaded machine; here the relay holds it): the close goes on in the
    background, and the connection, its other channels and consumers stay up. Cancelling
    the close sent a second Channel.Close, and the broker closed the whole connection:
    504 CHANNEL_ERROR - expected 'channel.open'."""
    backend = Backend("rabbit")
    try:
        async with broker_proxy(AMQP_URL) as proxy:
            bus = await backend.open(proxy.url)
            assert isinstance(bus, RabbitBus)
            bus.closer.timeout = 1.0
            spec = queue("a")
            if closing == "consumer":
                first = Recorder()
                consumer = await bus.consume_raw(spec, first)
                await bus.publish(events("before"))
                await first.wait_body("before")
                proxy.hold()
                await consumer.cancel()
            else:
                await bus.declare([spec])
                await bus.publish(events("before"))
                async with bus.fetch(spec, limit=1) as fetched:
                    assert [d.body for d in fetched.deliveries] == [b"before"]
                    proxy.hold()
            proxy.release()
            assert "has not confirmed the channel's close" in caplog.text
            after = Recorder()
            await bus.consume_raw(spec, after)
            await bus.publish(events("after"))
            await after.wait_body("after")
        lost = [r.getMessage() for r in caplog.records if any(s in r.getMessage() for s in LOST)]
        assert lost == []
    finally:
        await backend.aclose()
