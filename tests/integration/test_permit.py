"""Permit and gangs across real processes, RabbitMQ and Redis: an external approver
allowing some pods and rejecting others, a timeout's exact message, a binder killed
with -9 while 50 pods wait, a gang of 8 across two schedulers and two binders, and two
gangs competing for room for one."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aio_pika
import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import (
    AMQP_URL,
    Client,
    Processes,
    node,
    pod,
    running_cluster,
    until_true,
)
from tests.integration.permit_support import failed, not_settled, waiting

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
APPROVER = Path(__file__).resolve().parents[2] / "ops" / "examples" / "approver.py"


def write_config(path: Path, *, external_timeout: int | None, gang: bool) -> Path:
    plugins: dict[str, Any] = {}
    args: list[dict[str, Any]] = []
    if gang:
        plugins["multiPoint"] = {"enabled": [{"name": "Coscheduling"}]}
        plugins["queueSort"] = {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}
        args.append({"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}})
    if external_timeout is not None:
        plugins["permit"] = {"enabled": [{"name": "ExternalPermit"}]}
        selector = {"matchLabels": {"gate": "on"}}
        args.append(
            {
                "name": "ExternalPermit",
                "args": {"timeoutSeconds": external_timeout, "selector": selector},
            }
        )
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "default-scheduler", "plugins": plugins, "pluginConfig": args}
        ],
    }
    file = path / "config.json"
    file.write_text(json.dumps(config))
    return file


class Permits:
    """The client's approver side: publishes PermitDecisions on ksched.permit."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def open(self) -> None:
        self.exchange = await self.client.channel.declare_exchange(
            self.client.prefix + "ksched.permit", aio_pika.ExchangeType.TOPIC, durable=True
        )

    async def decide(self, verdict: str, name: str, message: str | None = None) -> None:
        body: dict[str, Any] = {"namespace": "e2e", "name": name, "plugin": "ExternalPermit"}
        if message is not None:
            body["message"] = message
        await self.exchange.publish(
            aio_pika.Message(json.dumps(body).encode(), content_type="application/json"),
            routing_key=f"{verdict}.e2e",
        )


def labelled(name: str, cpu: str = "100m", **labels: str) -> dict[str, Any]:
    obj = pod(name, cpu=cpu)
    obj["metadata"]["labels"] = labels
    return obj


def pod_group(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "e2e",
            "uid": f"pg-{name}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"minMember": min_member},
    }


async def run_cluster(
    tmp_path: Path, config: Path, replicas: int = 1
) -> AsyncIterator[tuple[Processes, Client, RedisStore, Permits]]:
    async for processes, client, store in running_cluster(
        tmp_path, "pm", "--config", str(config), replicas=replicas
    ):
        permits = Permits(client)
        await permits.open()
        yield processes, client, store, permits


@pytest.fixture
async def approvals(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore, Permits]]:
    config = write_config(tmp_path, external_timeout=60, gang=False)
    async for cluster in run_cluster(tmp_path, config):
        yield cluster


async def test_an_external_approver_allows_some_pods_and_rejects_others(
    approvals: tuple[Processes, Client, RedisStore, Permits],
) -> None:
    _processes, client, _store, permits = approvals
    await client.publish("node", node("node-a"))
    names = ["ok-0", "ok-1", "no-0", "no-1"]
    for name in names:
        await client.publish("pod", labelled(name, gate="on"))
    await client.publish("pod", pod("free"))
    await client.wait_for(lambda: len(waiting(client)) == 4 and "e2e/free" in client.bindings())
    announced = waiting(client)["ok-0"]
    assert announced["kind"] == "WaitingPod" and announced["node"] == "node-a"
    assert [p["name"] for p in announced["pendingPlugins"]] == ["ExternalPermit"]
    for name in names:
        if name.startswith("ok"):
            await permits.decide("allow", name)
        else:
            await permits.decide("reject", name, "over quota")
    await permits.decide("allow", "free")  # not waiting: an error report
    await client.wait_for(
        lambda: (
            {"e2e/ok-0", "e2e/ok-1"} <= set(client.bindings())
            and {"no-0", "no-1"} <= set(failed(client))
            and any(e.get("objectKind") == "PermitDecision" for e in client.errors)
        )
    )
    assert failed(client)["no-0"] == "0/1 nodes are available: 1 over quota."
    (error,) = [e for e in client.errors if e.get("objectKind") == "PermitDecision"]
    assert (error["name"], error["field"]) == ("free", "name")
    assert "e2e/no-0" not in client.bindings()


@pytest.fixture
async def quick(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore, Permits]]:
    config = write_config(tmp_path, external_timeout=1, gang=False)
    async for cluster in run_cluster(tmp_path, config):
        yield cluster


async def test_a_timeout_returns_the_pod_with_the_exact_message(
    quick: tuple[Processes, Client, RedisStore, Permits],
) -> None:
    _processes, client, _store, _permits = quick
    await client.publish("node", node("node-a"))
    await client.publish("pod", labelled("late", gate="on"))
    await client.wait_for(lambda: "late" in failed(client), within=30)
    assert failed(client)["late"] == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 1s at plugin "
        "ExternalPermit."
    )
    results = [
        e for e in client.events_with("FailedScheduling") if e["involvedObject"]["name"] == "late"
    ]
    assert results[0]["reason"] == "FailedScheduling"


async def test_a_binder_killed_while_50_pods_wait_loses_none(
    approvals: tuple[Processes, Client, RedisStore, Permits],
) -> None:
    processes, client, store, permits = approvals
    await client.publish("node", node("node-a", cpu="64"))
    names = [f"w-{i}" for i in range(50)]
    for name in names:
        await client.publish("pod", labelled(name, gate="on"))
    await client.wait_for(lambda: len(waiting(client)) == 50)
    before = {r.name: dict(r.pending) for r in (await store.waiting()).values()}
    assert len(before) == 50
    await processes.kill9("binder")
    await processes.start("binder", "--config", str(processes.workdir / "config.json"))
    after = {r.name: dict(r.pending) for r in (await store.waiting()).values()}
    assert after == before  # the same waits, the same deadlines: the time that remains
    for name in names:
        await permits.decide("allow", name)
    await client.wait_for(lambda: set(client.bindings()) >= {f"e2e/{n}" for n in names})
    assert all(len(targets) == 1 for targets in client.bindings().values())
    assert await store.waiting() == {}
    # Once the informer has recorded every Binding (the store first, then ksched.cluster),
    # every reservation has become a bound pod.
    await client.wait_for(lambda: set(client.recorded) >= {f"e2e/{n}" for n in names})
    assert not (await store.assumed())


@pytest.fixture
async def gangs(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore, Permits]]:
    config = write_config(tmp_path, external_timeout=None, gang=True)
    async for cluster in run_cluster(tmp_path, config, replicas=2):
        yield cluster


async def test_a_gang_of_8_across_two_schedulers_and_two_binders_binds_fully(
    gangs: tuple[Processes, Client, RedisStore, Permits],
) -> None:
    processes, client, store, _permits = gangs
    for n in ("node-a", "node-b"):
        await client.publish("node", node(n, cpu="4"))
    await client.publish("podgroup", pod_group("team", 8))
    for i in range(8):
        await client.publish("pod", labelled(f"team-{i}", cpu="1", **{GROUP_LABEL: "team"}))
    try:
        await client.wait_for(lambda: len(client.bindings()) == 8)
    except TimeoutError:
        raise AssertionError(await not_settled(processes, client, store)) from None
    bound = [
        (b["metadata"]["name"], b["target"]["name"], headers)
        for _, b, headers in client.decisions
        if b.get("kind") == "Binding"
    ]
    assert all(len(t) == 1 for t in client.bindings().values()), bound
    assert await store.waiting() == {}


async def test_two_gangs_competing_for_room_for_one_end_with_exactly_one_bound(
    gangs: tuple[Processes, Client, RedisStore, Permits],
) -> None:
    processes, client, store, _permits = gangs
    for n in ("node-a", "node-b"):
        await client.publish("node", node(n, cpu="2"))
    for group in ("red", "blue"):
        await client.publish("podgroup", pod_group(group, 3))
    for i in range(3):
        for group in ("red", "blue"):
            await client.publish("pod", labelled(f"{group}-{i}", cpu="1", **{GROUP_LABEL: group}))

    def settled() -> bool:
        bound = set(client.bindings())
        groups = [{f"e2e/{g}-{i}" for i in range(3)} for g in ("red", "blue")]
        one_whole = any(g <= bound for g in groups)
        other_failed = sum(1 for name in failed(client) if name.startswith(("red", "blue"))) >= 1
        return one_whole and other_failed

    try:
        await client.wait_for(settled, within=90)
    except TimeoutError:
        raise AssertionError(await not_settled(processes, client, store)) from None
    bound = set(client.bindings())
    red = {f"e2e/red-{i}" for i in range(3)}
    blue = {f"e2e/blue-{i}" for i in range(3)}
    assert (bound == red) or (bound == blue), bound
    usage = await store.node_usage()
    assert (
        sum(u.get("cpu", 0) for u in usage.values()) <= 3000 + 1000
    )  # the loser may be retrying one


@pytest.fixture
async def one_gang(tmp_path: Path) -> AsyncIterator[tuple[Processes, Client, RedisStore, Permits]]:
    config = write_config(tmp_path, external_timeout=None, gang=True)
    async for cluster in run_cluster(tmp_path, config):
        yield cluster


async def test_a_gang_that_cannot_complete_gives_its_room_to_a_lower_priority_pod(
    one_gang: tuple[Processes, Client, RedisStore, Permits],
) -> None:
    """Issue 30's case: one node with 2 CPUs, a gang of three 1-CPU members (priority 10,
    never preempting), a priority-0 pod asking the whole node. The gang's members wait,
    the third fails, PostFilter rejects the waiting ones, their room goes back and the
    lower-priority pod binds (not after the 5-minute flush)."""
    _processes, client, store, _permits = one_gang
    await client.publish("node", node("node-a", cpu="2"))
    await client.publish("podgroup", pod_group("team", 3))
    for i in range(3):
        member = labelled(f"team-{i}", cpu="1", **{GROUP_LABEL: "team"})
        member["spec"].update(priority=10, preemptionPolicy="Never")
        await client.publish("pod", member)
    await client.publish("pod", labelled("big", cpu="2"))
    await client.wait_for(lambda: "e2e/big" in client.bindings(), within=30)
    assert set(client.bindings()) == {"e2e/big"}

    async def released() -> bool:
        usage = await store.node_usage()
        return await store.waiting() == {} and sum(u.get("cpu", 0) for u in usage.values()) == 2000

    await until_true(released)  # the whole-node pod's, nothing of the gang's
    assert set(client.bindings()) == {"e2e/big"}


async def test_the_readme_approver_allows_and_rejects_by_name(
    approvals: tuple[Processes, Client, RedisStore, Permits],
) -> None:
    processes, client, _store, _permits = approvals
    approver = await asyncio.create_subprocess_exec(
        sys.executable,
        str(APPROVER),
        *("--amqp-url", AMQP_URL, "--namespace", processes.namespace),
        *("--allow", "^web-", "--message", "not on the list", "--max", "2", "--seconds", "60"),
        stdout=asyncio.subprocess.PIPE,
    )
    assert approver.stdout is not None
    try:
        async with asyncio.timeout(60):
            assert await approver.stdout.readline() == b"ready\n"  # its queue is bound
            await client.publish("node", node("node-a"))
            for name in ("web-1", "batch-1"):
                await client.publish("pod", labelled(name, gate="on"))
            out, _ = await approver.communicate()
    finally:
        if approver.returncode is None:
            approver.kill()
            await approver.wait()
    assert sorted(out.decode().splitlines()) == ["allow e2e/web-1", "reject e2e/batch-1"]
    await client.wait_for(lambda: "e2e/web-1" in client.bindings() and "batch-1" in failed(client))
    assert failed(client)["batch-1"] == "0/1 nodes are available: 1 not on the list."
