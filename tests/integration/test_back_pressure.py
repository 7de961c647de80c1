"""A burst of pods published at once, through the four service processes on the real
broker: every pod is bound once, no node is overcommitted, and no consumer of any
service ever held more deliveries than its prefetch (each logs the most it held when it
stops), so each hop's buffer stays bounded however large the burst. The 100,000-pod
version is a benchmark (``ksched bench SchedulingBasic --pods 100000 --mode services``
prints each service's peak RSS), not a test."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import pytest

from contracts.quantity import resource_amount
from services.common.store.redis import RedisStore
from tests.integration.harness import Client, Processes, node, pod

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

BURST = 5_000
NODES = [node(f"node-{i}", cpu="16", pods="110") for i in range(50)]
CPU_PER_POD = "100m"
CONSUMERS = {
    "informer": {"ksched.informer.events", "ksched.informer.bindings"},
    "queue": {"ksched.queue.cluster", "ksched.queue.results"},
    "scheduler": {"ksched.scheduler.requests", "ksched.scheduler.cluster."},
    "binder": {"ksched.binder.requests"},
}
"""Every consumer of each service (the scheduler's feed is named after its replica)."""
HELD = re.compile(r"consumer of (\S+): at most (\d+) deliveries held at once \(prefetch (\d+)\)")
MAX_PREFETCH = 1024


async def test_a_burst_is_absorbed_with_every_consumer_within_its_prefetch(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, store = cluster
    for n in NODES:
        await client.publish("node", n)
    names = [f"burst-{i}" for i in range(BURST)]
    for start in range(0, BURST, 500):  # as fast as confirms allow, 500 in flight
        chunk = names[start : start + 500]
        await asyncio.gather(*(client.publish("pod", pod(n, cpu=CPU_PER_POD)) for n in chunk))
    await client.wait_for(lambda: len(client.recorded) >= BURST, within=480)
    await processes.stop_all()

    bindings = client.bindings()
    assert sorted(bindings) == sorted(f"e2e/{name}" for name in names)
    assert all(len(set(targets)) == 1 for targets in bindings.values())
    per_node = Counter(targets[0] for targets in bindings.values())
    for name, count in per_node.items():
        assert count <= 110, name
        assert count * resource_amount("cpu", CPU_PER_POD) <= resource_amount("cpu", "16")
    usage, allocatable = await store.node_usage(), await store.allocatable()
    for name, used in usage.items():
        for resource, amount in used.items():
            assert amount <= allocatable[name].get(resource, 0), (name, resource)

    for service, queues in CONSUMERS.items():
        held = {m[1]: (int(m[2]), int(m[3])) for m in HELD.finditer(processes.log(service))}
        seen = {q for q in queues for name in held if name.startswith(q)}
        assert seen == queues, f"{service} logged {sorted(held)}"
        for queue, (peak, prefetch) in held.items():
            assert 0 < prefetch <= MAX_PREFETCH, (service, queue, prefetch)
            assert peak <= prefetch, (service, queue, peak, prefetch)
    peak, prefetch = {
        m[1]: (int(m[2]), int(m[3])) for m in HELD.finditer(processes.log("informer"))
    }["ksched.informer.events"]
    assert peak > 1, "the burst must have filled the informer's prefetch window"
