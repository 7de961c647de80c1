"""The queue service killed with SIGKILL and started again, against the real RabbitMQ and
Redis: it rebuilds activeQ from the store, no pod is lost or bound twice, and the
rebuilt queue hands pods out in priority order."""

from __future__ import annotations

import json
from typing import Any

import aio_pika
import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import (
    Client,
    Processes,
    assert_bound_exactly_once,
    assert_no_overcommit,
    assert_store_within_allocatable,
    node,
    pod,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PODS = 300


class LogWatcher(Client):
    """A client that also remembers every entry the informer logged (``ksched.cluster``),
    to know that an event reached the store before a service (re)starts."""

    def __init__(self, connection: aio_pika.abc.AbstractRobustConnection, namespace: str) -> None:
        super().__init__(connection, namespace)
        self.logged: set[tuple[str, str]] = set()

    async def _on_cluster(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        for entry in json.loads(message.body)["events"]:
            self.logged.add((entry["kind"], entry["object"]["metadata"]["name"]))
        await super()._on_cluster(message)


def with_priority(obj: dict[str, Any], priority: int) -> dict[str, Any]:
    obj["spec"]["priority"] = priority
    return obj


def failed_pods(client: Client) -> set[str]:
    """Names of the pods that got a FailedScheduling Event."""
    return {event["involvedObject"]["name"] for event in client.events_with("FailedScheduling")}


async def test_kill_9_the_queue_mid_run_loses_no_pod_and_binds_each_once(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    """Half the pods are published before the kill (some bound, the rest in flight or
    queued), half while the queue is down: the restarted queue finds them in the store."""
    processes, client, store = cluster
    for name in ("node-a", "node-b", "node-c", "node-d"):  # 4 x 8 cpu for 300 x 100m
        await client.publish("node", node(name, cpu="8"))
    for i in range(PODS):
        if i == PODS // 2:
            await client.wait_for(lambda: len(client.bindings()) >= 50)
            await processes.kill9("queue")
        await client.publish("pod", pod(f"p-{i}", cpu="100m"))
    await processes.start("queue")
    await client.wait_for(lambda: len(client.bindings()) >= PODS, within=120)
    await assert_bound_exactly_once(client, store, PODS)
    await assert_no_overcommit(client, store)
    assert await store.assumed() == {}, "no reservation is left behind"
    assert await store.leases() == {}, "no attempt is left in flight"


async def test_a_high_priority_pod_behind_a_backlog_gets_the_only_slot(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    """300 low-priority pods that cannot fit, then one high-priority pod, then a node
    with room for exactly one pod: the high-priority pod is the one bound.

    The queue is restarted while the pod and the node arrive, so that it rebuilds
    activeQ from the store with the whole backlog at once. Without the restart the
    outcome would depend on the clock: a move event sends a pod whose backoff has not
    expired to backoffQ, and the low-priority pods, which failed first, leave backoff
    first. The test waits on messages and log lines only."""
    processes, client, store = cluster
    watcher = LogWatcher(client.connection, processes.namespace)
    await watcher.open()
    await client.publish("node", node("tiny", cpu="500m"))
    low = [f"low-{i}" for i in range(PODS)]
    for name in low:
        await client.publish("pod", with_priority(pod(name, cpu="1"), 0))
    await client.wait_for(lambda: set(low) <= failed_pods(client))
    first = client.events_with("FailedScheduling")[0]
    assert first["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )

    await processes.kill9("queue")
    await client.publish("pod", with_priority(pod("high", cpu="1"), 1000))
    await client.publish("node", node("one-slot", cpu="1"))
    await watcher.wait_for(lambda: {("pod", "high"), ("node", "one-slot")} <= watcher.logged)
    await processes.start("queue")

    await client.wait_for(lambda: bool(client.recorded) and bool(client.bindings()))
    assert client.recorded == {"e2e/high": "one-slot"}
    assert client.bindings() == {"e2e/high": ["one-slot"]}
    await assert_store_within_allocatable(store)
