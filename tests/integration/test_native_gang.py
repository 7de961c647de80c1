"""The native gang API (scheduling.k8s.io PodGroup, pods' ``spec.schedulingGroup``,
GangScheduling) across real processes, RabbitMQ and Redis, with GenericWorkload and
GangScheduling on in every process: a gang of 8 across two schedulers and two binders
binds all or nothing and its PodGroup's condition turns True; two gangs competing for
room for one end with exactly one bound."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import Client, Processes, node, pod, running_cluster
from tests.integration.permit_support import failed, not_settled

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GATES = "GenericWorkload=true,GangScheduling=true"


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "e2e", "uid": f"pg-{name}"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def member(name: str, group: str, cpu: str = "1") -> dict[str, Any]:
    obj = pod(name, cpu=cpu)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


@pytest.fixture
async def two_replicas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Processes, Client, RedisStore]]:
    monkeypatch.setenv("KSCHED_FEATURE_GATES", GATES)  # the services inherit it
    async for cluster in running_cluster(tmp_path, "ng", replicas=2):
        yield cluster


def conditions(client: Client, group: str) -> list[tuple[str, str, str]]:
    return [
        (c["type"], c["status"], c["reason"])
        for key, body, _ in client.decisions
        if key.startswith("podgroup.") and body["metadata"]["name"] == group
        for c in body.get("status", {}).get("conditions", [])
    ]


async def test_a_native_gang_of_8_across_two_schedulers_binds_fully(
    two_replicas: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, store = two_replicas
    for n in ("node-a", "node-b"):
        await client.publish("node", node(n, cpu="4"))
    await client.publish("schedulingpodgroup", pod_group("team", 8))
    for i in range(8):
        await client.publish("pod", member(f"team-{i}", "team"))
    try:
        await client.wait_for(
            lambda: (
                len(client.bindings()) == 8
                and ("PodGroupInitiallyScheduled", "True", "Scheduled")
                in conditions(client, "team")
            )
        )
    except TimeoutError:
        raise AssertionError(await not_settled(processes, client, store)) from None
    assert all(len(targets) == 1 for targets in client.bindings().values())
    assert await store.waiting() == {}


async def test_two_native_gangs_competing_for_room_for_one_end_with_exactly_one_bound(
    two_replicas: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, store = two_replicas
    for n in ("node-a", "node-b"):
        await client.publish("node", node(n, cpu="2"))
    for group in ("red", "blue"):
        await client.publish("schedulingpodgroup", pod_group(group, 3))
    for i in range(3):
        for group in ("red", "blue"):
            await client.publish("pod", member(f"{group}-{i}", group))
    red = {f"e2e/red-{i}" for i in range(3)}
    blue = {f"e2e/blue-{i}" for i in range(3)}

    def settled() -> bool:
        bound = set(client.bindings())
        other_failed = any(name.startswith(("red", "blue")) for name in failed(client))
        return (red <= bound or blue <= bound) and other_failed

    try:
        await client.wait_for(settled, within=90)
    except TimeoutError:
        raise AssertionError(await not_settled(processes, client, store)) from None
    bound = set(client.bindings())
    assert bound in (red, blue), bound
