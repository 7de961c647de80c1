"""The descheduler service against the real RabbitMQ and Redis: it evicts the pods of
a live cluster (the informer's projection in Redis), publishes a policy/v1 Eviction and
an Event for each, honours a PodDisruptionBudget and the policy's limits, never evicts
a pod again while its eviction is outstanding, and runs as one instance (the lease)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import Client, Processes, node, running_cluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictTotal: {total}
profiles:
- name: taints
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
"""


def bound(name: str, node_name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "e2e",
            "uid": f"uid-{name}",
            "labels": labels,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs"}
            ],
        },
        "spec": {
            "nodeName": node_name,
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
        "status": {"phase": "Running"},
    }


BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "e2e"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
    "status": {"disruptionsAllowed": 1},
}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore]]:
    async for running in running_cluster(tmp_path, "ds"):
        yield running


async def populate(client: Client, store: RedisStore) -> None:
    tainted = node("n1")
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    await client.publish("node", tainted)
    await client.publish("node", node("n2"))
    await client.publish("poddisruptionbudget", BUDGET)
    for name, labels in (("web-a", {"app": "web"}), ("web-b", {"app": "web"}), ("other", {})):
        await client.publish("pod", bound(name, "n1", **labels))
    await until(lambda: _stored(store))


async def _stored(store: RedisStore) -> bool:
    return len(await store.objects("pod")) >= 3 and bool(await store.objects("poddisruptionbudget"))


async def until(check: Any, within: float = 60.0) -> None:
    """Until the async ``check()`` holds; polled (the store has no change feed), bounded."""
    async with asyncio.timeout(within):
        while True:
            if await check():
                return
            await asyncio.sleep(0.1)


async def _no_evictions(store: RedisStore) -> bool:
    return not await store.evictions()


def evictions(client: Client) -> list[dict[str, Any]]:
    return [b for key, b, _ in client.decisions if key.startswith("eviction.")]


async def deschedule(
    processes: Processes, policy: Path, *flags: str, key: str = "descheduler"
) -> int:
    """One cycle (interval 0): the process exits by itself; its exit code."""
    await processes.start("descheduler", "--policy", str(policy), *flags, key=key)
    async with asyncio.timeout(60):
        return await processes.children[key].wait()


async def test_evicts_within_the_budget_and_never_twice(
    cluster: tuple[Processes, Client, RedisStore], tmp_path: Path
) -> None:
    processes, client, store = cluster
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.format(total=10))
    await populate(client, store)

    assert await deschedule(processes, policy) == 0
    await client.wait_for(lambda: len(evictions(client)) >= 2)
    first = evictions(client)
    names = sorted(e["metadata"]["name"] for e in first)
    # The budget allows one of the two web pods; "other" has none.
    assert len(names) == 2 and "other" in names, names
    eviction = first[0]
    assert eviction["kind"] == "Eviction" and eviction["apiVersion"] == "policy/v1"
    annotations = eviction["metadata"]["annotations"]
    assert annotations["requested-by"] == "sigs.k8s.io/descheduler"
    assert annotations["descheduler.ksched.io/plugin"] == "RemovePodsViolatingNodeTaints"
    assert annotations["reason"] == "triggered by taints/RemovePodsViolatingNodeTaints: "
    assert eviction["deleteOptions"]["preconditions"]["uid"].startswith("uid-")
    await client.wait_for(lambda: len(client.events_with("RemovePodsViolatingNodeTaints")) >= 2)
    event = client.events_with("RemovePodsViolatingNodeTaints")[0]
    assert event["message"] == "pod eviction from n1 node by sigs.k8s.io/descheduler"
    assert event["action"] == "Descheduled"
    assert set((await store.evictions()).values()) == {f"e2e/{n}" for n in names}

    # Outstanding: a second cycle evicts nothing (the pods are not gone yet).
    assert await deschedule(processes, policy, key="descheduler-2") == 0
    assert len(evictions(client)) == 2

    # The client deletes them; their records go; the last web pod may go now.
    for name in names:
        gone = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "e2e", "uid": f"uid-{name}"},
        }
        await client.publish("pod", gone, "DELETED")
    await until(lambda: _no_evictions(store))
    assert await deschedule(processes, policy, key="descheduler-3") == 0
    await client.wait_for(lambda: len(evictions(client)) >= 3)
    assert evictions(client)[2]["metadata"]["name"] not in names


SHORT_LEASE = (
    "--leader-elect-lease-duration", "2s",
    "--leader-elect-renew-deadline", "1500ms",
    "--leader-elect-retry-period", "500ms",
)  # fmt: skip
"""A lease a successor may take over 2 s after its holder died."""


async def test_the_total_limit_and_one_instance_at_a_time(
    cluster: tuple[Processes, Client, RedisStore], tmp_path: Path
) -> None:
    processes, client, store = cluster
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.format(total=1))
    await populate(client, store)
    # A long-running instance holds the lease (and evicts one pod: the limit).
    await processes.start("descheduler", "--policy", str(policy), "--interval", "1h", key="holder")
    await client.wait_for(lambda: len(evictions(client)) >= 1)
    # A second one-shot instance finds the lease taken: it evicts nothing and ends.
    await processes.spawn("descheduler", "--policy", str(policy), key="second")
    async with asyncio.timeout(60):
        assert await processes.children["second"].wait() == 0
    assert "another descheduler holds the lease" in processes.log("second")
    assert "descheduler started" not in processes.log("second")
    assert len(evictions(client)) == 1
    assert await processes.terminate("holder") == 0


async def test_killed_between_recording_and_publishing_it_never_evicts_twice(
    cluster: tuple[Processes, Client, RedisStore], tmp_path: Path
) -> None:
    """kill -9 at the failpoint after the evictions are recorded in Redis and before
    they are published: the next instance (once the dead one's leader lease lapsed) counts
    them as outstanding: it neither evicts those pods again nor exceeds the total
    limit with them (3: two recorded, so one more of the two pods that arrived since)."""
    processes, client, store = cluster
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.format(total=3))
    await populate(client, store)
    await processes.start(
        "descheduler",
        "--policy", str(policy), *SHORT_LEASE,
        key="doomed",
        env={"KSCHED_FAILPOINTS": "descheduler-after-record"},
    )  # fmt: skip
    async with asyncio.timeout(60):
        code = await processes.children["doomed"].wait()
    assert code == -9, processes.log("doomed")
    recorded = set((await store.evictions()).values())
    # The budget allows one of the two web pods; "other" has none.
    assert len(recorded) == 2 and "e2e/other" in recorded, recorded

    for name in ("late-1", "late-2"):
        await client.publish("pod", bound(name, "n1"))
    await until(lambda: _has_pods(store, "late-1", "late-2"))
    await processes.start(
        "descheduler", "--policy", str(policy), "--interval", "1s", key="successor"
    )
    await processes.logged("successor", "cycle: 1 evicted")
    await processes.logged("successor", "cycle: 0 evicted")  # a later cycle: nothing more
    await client.wait_for(lambda: len(evictions(client)) >= 1)
    published = [e["metadata"]["name"] for e in evictions(client)]
    assert len(published) == 1 and published[0].startswith("late-"), published
    assert await processes.terminate("successor") == 0
    assert set((await store.evictions()).values()) == recorded | {f"e2e/{published[0]}"}


async def _has_pods(store: RedisStore, *names: str) -> bool:
    bodies = (await store.objects("pod")).values()
    return all(any(f'"{n}"'.encode() in body for body in bodies) for n in names)
