"""What one Bus backend does beyond the shared contract (test_bus.py): MemoryBus's
``wait_idle``, and RabbitBus's message-by-message publish when aiormq lacks what its
batched write uses."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from contracts import topology as t
from services.common.bus import BusRefused, Delivery, MemoryBus, Message
from tests.contract.bus_support import DEADLINE, Backend, Recorder, events, queue

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
