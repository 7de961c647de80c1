"""``scheduler_cache_size`` follows the cache between batches: upstream's cache
refreshes it every second (``cleanupAssumedPods`` then ``updateMetrics``), so assumed
pods whose Bindings arrived stop being counted on an idle replica."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest

from contracts import topology
from contracts.events import ClusterBatch, PodEntry
from services.common.bus import Message
from services.common.store import ProjectedEntry
from services.scheduler.service import CACHE_METRICS_PERIOD
from tests.builders import make_node, make_pod
from tests.unit.scheduler.service_support import Harness


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    yield h
    await h.service.stop()
    await h.bus.close()


def cache_size(harness: Harness, kind: str) -> float | None:
    registry = harness.service.metrics.registry
    return registry.get_sample_value("scheduler_cache_size", {"type": kind})


async def test_assumed_pods_drop_to_zero_once_bound_without_another_batch(
    harness: Harness,
) -> None:
    await harness.add_node(make_node("n1", allocatable={"cpu": "4", "pods": 110}))
    await harness.start()
    pods = [make_pod(f"p{i}", requests={"cpu": "1"}) for i in range(3)]
    await harness.schedule(*pods)
    await harness.bus.wait_idle()
    assert sorted(b.name for b in harness.binds) == ["p0", "p1", "p2"]
    assert cache_size(harness, "assumed_pods") == 3

    entries = []  # the binder's Bindings, recorded in the log by the informer
    for pod in pods:
        harness.seq += 1
        bound = make_pod(pod.metadata.name, uid=pod.metadata.uid, node_name="n1")
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        body = msgspec.json.encode(bound)
        await harness.store.apply([ProjectedEntry(harness.seq, "pod", key, body)])
        entries.append(PodEntry(seq=harness.seq, type="MODIFIED", object=bound))
    batch = msgspec.json.encode(ClusterBatch(events=entries))
    await harness.bus.publish([Message(topology.CLUSTER.name, "", batch)])
    await harness.bus.wait_idle()
    assert harness.service.cache.num_assumed == 0
    assert cache_size(harness, "assumed_pods") == 3  # no batch since: not refreshed yet

    await harness.clock.advance(CACHE_METRICS_PERIOD)
    assert cache_size(harness, "assumed_pods") == 0
    assert cache_size(harness, "pods") == 3
    assert cache_size(harness, "nodes") == 1


async def test_the_refresh_runs_every_period_on_the_services_clock(harness: Harness) -> None:
    await harness.start()
    assert cache_size(harness, "nodes") == 0
    await harness.add_node(make_node("n1"), publish=True)
    await harness.bus.wait_idle()
    assert cache_size(harness, "nodes") == 0  # between two refreshes
    await harness.clock.advance(CACHE_METRICS_PERIOD)
    assert cache_size(harness, "nodes") == 1
