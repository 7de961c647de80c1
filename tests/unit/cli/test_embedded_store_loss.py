"""The embedded cluster loses its store mid-run (MemoryStore.flush, as a FLUSHDB): every
pod is still bound exactly once, no node is overcommitted, and no decision is made on
the empty store (no ``no nodes available``)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable

import msgspec
import pytest

from contracts import topology
from contracts.kinds import KubeObject, kind_of
from services.cli.embedded import DecisionRecord, EmbeddedCluster
from services.cli.manifests import Document
from services.common.clock import FakeClock
from tests.builders import make_node, make_pod

NODES = 20
PODS = 200
PER_NODE = 10
"""Each node fits 10 pods (1 cpu of 10): 200 pods fill the 20 nodes exactly."""


def document(index: int, obj: KubeObject) -> Document:
    kind = kind_of(obj)
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Document(index, kind, body, topology.event_key(kind, "ADDED"))


async def drive(cluster: EmbeddedCluster, done: Callable[[], bool]) -> None:
    """Run the loop, advancing the FakeClock 0.1 s at a time, until ``done``. (Not
    ``settle``: a service waiting for the rebuilt store waits on the clock.)"""
    for _ in range(3_000):
        for _ in range(100):
            await asyncio.sleep(0)
        if done():
            return
        await cluster.clock.advance(0.1)
    raise AssertionError("the cluster did not finish")


@pytest.mark.parametrize(
    "lose_after",
    [0, 1, 60, 150],
    ids=["before-any-binding", "after-the-first-binding", "mid-run", "late"],
)
async def test_an_emptied_store_loses_no_pod_and_decides_nothing_on_it(
    lose_after: int, caplog: pytest.LogCaptureFixture
) -> None:
    bindings: Counter[str] = Counter()
    decisions: list[DecisionRecord] = []
    cluster: EmbeddedCluster

    def on_decision(record: DecisionRecord) -> None:
        decisions.append(record)
        if record.kind == "Binding":
            bindings[record.pod] += 1
            if sum(bindings.values()) == lose_after:
                cluster.store.flush()

    cluster = EmbeddedCluster(clock=FakeClock(), hold=False, seed=7, on_decision=on_decision)
    await cluster.start()
    nodes = [
        make_node(f"n{i:02}", allocatable={"cpu": "10", "memory": "64Gi", "pods": "110"})
        for i in range(NODES)
    ]
    pods = [make_pod(f"p{i:03}", requests={"cpu": "1"}) for i in range(PODS)]
    await cluster.publish([document(i, n) for i, n in enumerate(nodes, start=1)])
    if lose_after == 0:
        cluster.store.flush()
    await cluster.publish([document(i, p) for i, p in enumerate(pods, start=NODES + 1)])

    def rebuilt() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.levelno == logging.WARNING and "lost the cluster's projection" in r.getMessage()
        ]

    # Lost after the last Binding was recorded, only the informer's check notices.
    await drive(cluster, lambda: len(bindings) == PODS and bool(rebuilt()))
    await drive(cluster, lambda: cluster.queue.in_flight == 0)

    assert set(bindings) == {f"default/p{i:03}" for i in range(PODS)}
    assert set(bindings.values()) == {1}, "a pod was bound twice"
    per_node = Counter(r.node for r in decisions if r.kind == "Binding")
    assert max(per_node.values()) <= PER_NODE
    assert not [r for r in decisions if r.kind == "FailedScheduling"]
    usage = await cluster.store.client().node_usage()
    assert all(u.get("cpu", 0) <= 10_000 for u in usage.values())
    assert len(rebuilt()) == 1
    await cluster.stop()
