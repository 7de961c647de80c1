"""Preemption across real processes, RabbitMQ and Redis: a high-priority pod on a full
cluster gets a nomination and a preemption decision, the README's evictor deletes the
victims and the pod binds on its nominated node; a PDB that allows no disruption steers
preemption to another node; two scheduler replicas preempting at once never spend the
same room twice."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import (
    AMQP_URL,
    Client,
    Processes,
    node,
    pod,
    running_cluster,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EVICTOR = Path(__file__).resolve().parents[2] / "ops" / "examples" / "evictor.py"


def prioritized(name: str, priority: int, cpu: str, **labels: str) -> dict[str, Any]:
    obj = pod(name, cpu=cpu)
    obj["spec"]["priority"] = priority
    obj["metadata"]["labels"] = labels
    return obj


def bound(name: str, node_name: str, priority: int, cpu: str, **labels: str) -> dict[str, Any]:
    obj = prioritized(name, priority, cpu, **labels)
    obj["spec"]["nodeName"] = node_name
    obj["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    return obj


@contextlib.asynccontextmanager
async def _explained(
    client: Client, store: RedisStore, processes: Processes
) -> AsyncIterator[None]:
    """On a timeout, fail with what the client received (kind, pod, node or message)
    and the queue's view."""
    try:
        yield
    except TimeoutError:
        seen = [
            (key, b.get("reason") or b.get("kind"), b.get("message") or b.get("nominatedNode"))
            for key, b, _ in client.decisions
        ]
        view = await store.queue_view()
        queue_log = processes.log("queue")[-2000:]
        pytest.fail(f"timed out; decisions: {seen}; queue: {view!r}; queue log: {queue_log}")


def preemptions(client: Client) -> list[dict[str, Any]]:
    return [b for key, b, _ in client.decisions if key.startswith("preemption.")]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore]]:
    async for running in running_cluster(tmp_path, "pe"):
        yield running


@pytest.fixture
async def replicated(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore]]:
    async for running in running_cluster(tmp_path, "pe", replicas=2):
        yield running


async def test_a_high_priority_pod_preempts_and_binds_after_the_evictor_deletes(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, _store = cluster
    evictor = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EVICTOR),
        *("--amqp-url", AMQP_URL, "--namespace", processes.namespace),
        *("--max", "1", "--seconds", "60"),
        stdout=asyncio.subprocess.PIPE,
    )
    assert evictor.stdout is not None
    try:
        async with asyncio.timeout(60):
            assert await evictor.stdout.readline() == b"ready\n"
            await client.publish("node", node("node-a", cpu="4"))
            await client.publish("pod", bound("low-1", "node-a", 0, "2"))
            await client.publish("pod", bound("low-2", "node-a", 0, "2"))
            await client.publish("pod", prioritized("urgent", 1000, "3"))
            out, _ = await evictor.communicate()
    finally:
        if evictor.returncode is None:
            evictor.kill()
            await evictor.wait()
    assert out.decode().splitlines() == ["preempted e2e/urgent on node-a: e2e/low-1 e2e/low-2"]
    await client.wait_for(lambda: "e2e/urgent" in client.bindings())
    assert client.bindings()["e2e/urgent"] == ["node-a"]
    (preemption,) = preemptions(client)
    assert preemption["nominatedNode"] == "node-a"
    assert {v["condition"]["reason"] for v in preemption["victims"]} == {"PreemptionByScheduler"}
    nominations = [b for key, b, _ in client.decisions if key.startswith("nomination.")]
    assert [n["status"]["nominatedNodeName"] for n in nominations] == ["node-a"]
    preempted = client.events_with("Preempted")
    assert sorted(e["involvedObject"]["name"] for e in preempted) == ["low-1", "low-2"]
    (failed,) = client.events_with("FailedScheduling")
    assert failed["message"] == "0/1 nodes are available: 1 Insufficient cpu."


async def test_a_pdb_that_allows_no_disruption_steers_preemption(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    _processes, client, _store = cluster
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "e2e"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}},
        "status": {"disruptionsAllowed": 0},
    }
    await client.publish("poddisruptionbudget", budget)
    for name in ("node-a", "node-b"):
        await client.publish("node", node(name, cpu="4"))
    # node-a's pod has the lower priority, but its PDB allows no disruption.
    await client.publish("pod", bound("db-0", "node-a", 0, "4", app="db"))
    await client.publish("pod", bound("web-0", "node-b", 10, "4"))
    await client.publish("pod", prioritized("urgent", 1000, "2"))
    await client.wait_for(lambda: bool(preemptions(client)))
    (preemption,) = preemptions(client)
    assert preemption["nominatedNode"] == "node-b"
    assert [v["name"] for v in preemption["victims"]] == ["web-0"]


async def test_two_replicas_preempting_at_once_never_spend_the_same_room(
    replicated: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, store = replicated
    for name in ("node-a", "node-b"):
        await client.publish("node", node(name, cpu="4"))
        await client.publish("pod", bound(f"low-{name}", name, 0, "4"))
    for name in ("urgent-1", "urgent-2"):
        await client.publish("pod", prioritized(name, 1000, "4"))

    def both_bound() -> bool:
        return {"e2e/urgent-1", "e2e/urgent-2"} <= set(client.bindings())

    handled = 0
    async with asyncio.timeout(120), _explained(client, store, processes):
        while not both_bound():
            await client.wait_for(
                lambda seen=handled: both_bound() or len(preemptions(client)) > seen
            )
            new = preemptions(client)[handled:]
            handled += len(new)
            for preemption in new:  # the client deletes the victims
                for victim in preemption["victims"]:
                    meta = {k: victim[k] for k in ("name", "namespace", "uid")}
                    gone = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
                    await client.publish("pod", gone, "DELETED")
    targets = sorted(client.bindings()[p][0] for p in ("e2e/urgent-1", "e2e/urgent-2"))
    assert targets == ["node-a", "node-b"]
    victims = {v["name"] for p in preemptions(client) for v in p["victims"]}
    assert victims == {"low-node-a", "low-node-b"}  # never each other
    usage = await store.node_usage()
    assert all(u.get("cpu", 0) <= 4000 for u in usage.values()), usage
