"""Redis loses the cluster's keys mid-run (this test deletes its own namespace's keys,
as a FLUSHDB, a restart without persistence or a failover to an empty replica would),
against the four services as processes and the real RabbitMQ and Redis: the informer
reports the loss and rebuilds the store from its event log, every pod is bound exactly
once, no node is overcommitted and no decision is made on the empty store."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import Client, Processes, lose_namespace, node, pod, until_true

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES = 20
PODS = 200
"""20 nodes of 1 cpu and 200 pods of 100m: the pods fill every node exactly, so a
decision taken on a store that lost its charges would overcommit one."""


def logs(processes: Processes) -> str:
    """Each service's warnings and errors, to tell why pods were not bound."""
    out = []
    for name in ("informer", "queue", "scheduler", "binder"):
        lines = [line for line in processes.log(name).splitlines() if " INFO " not in line]
        out.append(f"--- {name}:\n" + "\n".join(lines[-40:]))
    return "\n".join(out)


async def test_redis_emptied_mid_run_loses_no_pod_and_decides_nothing_on_it(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, store = cluster
    for i in range(NODES):
        await client.publish("node", node(f"node-{i:02}", cpu="1"))
    for i in range(PODS):
        if i == PODS // 2:
            await client.wait_for(lambda: len(client.bindings()) >= 50)
            await lose_namespace(processes.namespace)
        await client.publish("pod", pod(f"p-{i:03}", cpu="100m"))

    try:
        await client.wait_for(lambda: len(client.recorded) >= PODS, within=90)
    except TimeoutError:
        unbound = sorted({f"e2e/p-{i:03}" for i in range(PODS)} - set(client.recorded))
        raise AssertionError(
            f"{len(unbound)} pods never bound: {unbound[:20]}\n" + logs(processes)
        ) from None
    await processes.logged("informer", "the store lost the cluster's projection", within=10)

    bindings = client.bindings()
    assert len(bindings) == PODS
    twice = {name: targets for name, targets in bindings.items() if len(targets) != 1}
    assert not twice, f"bound more than once: {twice}"
    per_node = Counter(targets[0] for targets in bindings.values())
    assert max(per_node.values()) <= 10, f"a node of 1 cpu got more than 10 pods: {per_node}"
    assert not client.events_with("FailedScheduling"), "a decision was made on the empty store"
    stored = {k: json.loads(v) for k, v in (await store.objects("pod")).items()}
    assert {k: v["spec"]["nodeName"] for k, v in stored.items()} == {
        name: targets[0] for name, targets in bindings.items()
    }
    assert len(await store.objects("node")) == NODES  # the log's first entries came back
    usage, allocatable = await store.node_usage(), await store.allocatable()
    for name, used in usage.items():
        assert used.get("cpu", 0) <= allocatable[name]["cpu"], name

    assert await store.assumed() == {}, "a reservation was left behind"

    async def no_lease_left() -> bool:
        return await store.leases() == {}

    try:
        await until_true(no_lease_left)
    except TimeoutError:
        raise AssertionError(f"leases left: {await store.leases()}\n" + logs(processes)) from None
    [line] = [
        line
        for line in processes.log("informer").splitlines()
        if "lost the cluster's projection" in line
    ]
    assert "WARNING" in line and "rebuilt" in line
