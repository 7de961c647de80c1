"""The Bus contract's ``linger`` window (services/common/bus/linger.py), against
MemoryBus and RabbitMQ: a batch's first delivery waits for more only while deliveries
come closer together than the window, and never past it (the ``bus`` fixture:
conftest.py)."""

from __future__ import annotations

import pytest

from services.common.bus import Bus
from tests.contract.bus_support import Recorder, events, queue

pytestmark = pytest.mark.timeout(60)

LONG = 30.0
"""A window longer than any test waits (bus_support.DEADLINE): a batch handed over
within the deadline was not held for the window."""


async def test_a_lone_delivery_is_handed_over_at_once(bus: Bus) -> None:
    got = Recorder()
    await bus.consume_raw(queue("q"), got, linger=LONG)
    await bus.publish(events("alone"))
    await got.wait_body("alone")  # within the deadline, not after the 30 s window
    assert got.batches == [1]


async def test_deliveries_close_together_wait_for_the_batch_to_fill(bus: Bus) -> None:
    got = Recorder()
    await bus.consume_raw(queue("q"), got, max_batch=3, linger=LONG)
    await bus.publish(events("a"))
    await got.wait_body("a")
    for body in ("b", "c", "d"):  # each its own publish: b is alone in the queue at first
        await bus.publish(events(body))
    await got.wait_body("d")
    assert got.bodies == ["a", "b", "c", "d"]
    assert got.batches == [1, 3], "b arrived soon after a: it waits for c and d"


async def test_the_window_ends_with_what_it_has(bus: Bus) -> None:
    got = Recorder()
    await bus.consume_raw(queue("q"), got, max_batch=100, linger=0.2)
    await bus.publish(events("a"))
    await got.wait_body("a")
    await bus.publish(events("b"))
    await got.wait_body("b")  # handed over when its 0.2 s ended, the batch not full
    assert got.batches == [1, 1]


async def test_without_a_window_a_delivery_never_waits(bus: Bus) -> None:
    got = Recorder()
    await bus.consume_raw(queue("q"), got, max_batch=3)
    await bus.publish(events("a"))
    await got.wait_body("a")
    await bus.publish(events("b"))
    await got.wait_body("b")
    assert got.batches == [1, 1]
