"""Snapshots and retention with the four services as processes, the real RabbitMQ and
Redis: the informer snapshots its log every 40 entries and keeps 10 before the newest,
Redis then loses the namespace, and the informer rebuilds the store from the snapshot
and the tail (not from the log's first entry, which retention dropped); every pod stays
bound once and ingest goes on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import (
    Client,
    Processes,
    lose_namespace,
    node,
    pod,
    until_true,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def informer_env() -> dict[str, str]:
    return {"KSCHED_SNAPSHOT_EVERY": "40", "KSCHED_LOG_RETENTION": "10"}


def first_seq(log: Path) -> int:
    with log.open("rb") as f:
        return int(json.loads(f.readline())["seq"])


async def test_a_store_lost_after_retention_is_rebuilt_from_the_snapshot(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, store = cluster
    log = processes.workdir / "events.jsonl"
    for i in range(10):
        await client.publish("node", node(f"node-{i}", cpu="1"))
    for i in range(100):
        await client.publish("pod", pod(f"p-{i:03}", cpu="100m"))
    await client.wait_for(lambda: len(client.recorded) >= 100, within=90)
    snapshots = log.with_name("events.jsonl.snapshots")

    async def trimmed() -> bool:  # written in the background, after a batch
        return snapshots.is_dir() and bool(os.listdir(snapshots)) and first_seq(log) > 1

    await until_true(trimmed)  # TimeoutError: no snapshot, or retention dropped nothing

    await lose_namespace(processes.namespace)
    await processes.logged("informer", "from the snapshot at seq", within=30)
    await client.publish("node", node("node-extra", cpu="1"))
    for i in range(10):
        await client.publish("pod", pod(f"late-{i}", cpu="100m"))
    await client.wait_for(lambda: len(client.recorded) >= 110, within=90)

    bindings = client.bindings()
    assert len(bindings) == 110
    assert all(len(targets) == 1 for targets in bindings.values()), bindings
    stored = {k: json.loads(v) for k, v in (await store.objects("pod")).items()}
    assert {k: v["spec"]["nodeName"] for k, v in stored.items()} == {
        name: targets[0] for name, targets in bindings.items()
    }
    assert len(await store.objects("node")) == 11
