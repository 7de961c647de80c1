"""The scheduler when the store loses its projection: no decision on the empty store
(the batch fails with ``error``, no FailedScheduling Event), and the snapshot is
reloaded from the rebuilt store, not from the empty one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import msgspec
import pytest

from services.common.resources import node_allocatable
from services.common.store import ProjectedEntry
from tests.builders import make_node, make_pod
from tests.unit.scheduler.service_support import Harness

NODES = [make_node(f"n{i}", allocatable={"cpu": "2", "pods": 110}) for i in (1, 2)]
LOG = [
    ProjectedEntry(
        seq, "node", n.metadata.name, msgspec.json.encode(n), allocatable=node_allocatable(n)
    )
    for seq, n in enumerate(NODES, start=1)
]


async def tick_until(condition: Callable[[], bool]) -> None:
    """Run the loop until ``condition`` (a handler waiting for the store waits on the
    FakeClock, so MemoryBus.wait_idle would not return)."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    for node in NODES:
        await h.add_node(node)
    await h.start()
    yield h
    await h.service.stop()
    await h.bus.close()


async def test_a_batch_on_a_lost_store_fails_with_error_and_the_snapshot_waits(
    harness: Harness,
) -> None:
    harness.store.flush()
    # add=False: the informer cannot write to the lost store either
    await harness.schedule(make_pod("p", requests={"cpu": "1"}), lease=False, add=False)
    await tick_until(lambda: bool(harness.results))

    [result] = harness.results
    assert result.outcome == "error"
    assert "the cluster store was lost" in result.message
    assert harness.binds == [] and harness.events == []  # nothing decided, no Event
    assert harness.service.cache.num_nodes == 2  # not reloaded from the empty store

    await harness.store.client().restore(LOG, final=True)  # the informer's rebuild
    await harness.clock.advance(0.2)
    await harness.bus.wait_idle()
    assert harness.service.cache.num_nodes == 2
    await harness.schedule(make_pod("q", requests={"cpu": "2"}))
    await harness.bus.wait_idle()
    assert [(b.name, b.node in {"n1", "n2"}) for b in harness.binds] == [("q", True)]
    assert harness.events == []
