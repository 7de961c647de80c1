"""A pod published onto RabbitMQ comes back as a Binding, through four service processes,
with Redis as the shared cache; crashes, duplicates and bad input change nothing."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import (
    Client,
    Processes,
    assert_bound_exactly_once,
    assert_no_overcommit,
    node,
    pod,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES = [node("node-a", cpu="8"), node("node-b", cpu="8"), node("node-c", cpu="8")]
CPU_PER_POD = "100m"


async def publish_cluster(client: Client, pods: int, prefix: str = "p") -> None:
    for n in NODES:
        await client.publish("node", n)
    for i in range(pods):
        await client.publish("pod", pod(f"{prefix}-{i}", cpu=CPU_PER_POD))


async def test_pods_published_on_rabbitmq_come_back_as_bindings(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    _processes, client, store = cluster
    await publish_cluster(client, 200)
    await client.wait_for(lambda: len(client.bindings()) >= 200)
    await assert_bound_exactly_once(client, store, 200)
    await assert_no_overcommit(client, store)
    # Spread: LeastAllocated puts pods on all three equal nodes.
    assert len({targets[0] for targets in client.bindings().values()}) == 3

    await client.publish("pod", pod("too-big", cpu="100"))
    await client.wait_for(lambda: bool(client.events_with("FailedScheduling")))
    (event,) = client.events_with("FailedScheduling")
    assert event["involvedObject"]["name"] == "too-big"
    assert event["message"] == (
        "0/3 nodes are available: 3 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    assert event["type"] == "Warning"
    assert "too-big" not in {k.split("/")[1] for k in client.bindings()}


@pytest.mark.parametrize("victim", ["scheduler", "binder"])
async def test_kill_9_mid_run_loses_no_pod_and_binds_each_once(
    cluster: tuple[Processes, Client, RedisStore], victim: str
) -> None:
    processes, client, store = cluster
    await publish_cluster(client, 200)
    await client.wait_for(lambda: len(client.bindings()) >= 40)
    await processes.kill9(victim)
    await processes.start(victim)
    await client.wait_for(lambda: len(client.bindings()) >= 200, within=120)
    await assert_bound_exactly_once(client, store, 200)
    await assert_no_overcommit(client, store)
    assert await store.assumed() == {}, "no reservation is left behind"


async def test_duplicate_and_redelivered_events_change_nothing(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, store = cluster
    for n in NODES:
        await client.publish("node", n)
        await client.publish("node", n)  # duplicate
    for _ in range(3):
        await client.publish("pod", pod("web"))
    await client.wait_for(lambda: len(client.bindings()) >= 1)
    # The pending copy arrives again after the binding (a late redelivery).
    await client.publish("pod", pod("web"))
    await client.publish("pod", pod("marker"))  # ordered after it on the same queue
    await client.wait_for(lambda: "e2e/marker" in client.recorded)
    assert client.bindings()["e2e/web"] == client.bindings()["e2e/web"][:1]
    log = (await asyncio.to_thread(Path(processes.workdir / "events.jsonl").read_text)).splitlines()
    entries = [json.loads(line) for line in log]
    keys = Counter(
        (e["kind"], e["object"]["metadata"]["name"], e.get("origin", "user")) for e in entries
    )
    assert keys[("node", "node-a", "user")] == 1
    assert keys[("pod", "web", "user")] == 1
    assert keys[("pod", "web", "binding")] == 1
    stored = json.loads((await store.objects("pod"))["e2e/web"])
    assert stored["spec"]["nodeName"] == client.bindings()["e2e/web"][0]


BAD_INPUT = [
    # (routing key, body, expected kind, name, field)
    ("pod.added", b'{"type": "ADDED", "object": {"kind": "Pod", ', "pod", None, ""),
    (
        "widget.added",
        json.dumps({"type": "ADDED", "object": {"metadata": {"name": "w"}}}).encode(),
        "widget",
        "w",
        "kind",
    ),
    (
        "pod.added",
        json.dumps({"type": "ADDED", "object": {"kind": "Pod", "metadata": {}}}).encode(),
        "pod",
        None,
        "metadata.name",
    ),
    (
        "pod.added",
        json.dumps({"type": "ADDED", "object": pod("bad-cpu", cpu="12x")}).encode(),
        "pod",
        "bad-cpu",
        "spec.containers[0].resources.requests.cpu",
    ),
    (
        "pod.added",
        json.dumps({"type": "ADDED", "object": pod("negative", memory="-5Mi")}).encode(),
        "pod",
        "negative",
        "spec.containers[0].resources.requests.memory",
    ),
    (
        "pod.added",
        json.dumps(
            {
                "type": "ADDED",
                "object": {
                    **pod("huge"),
                    "metadata": {
                        "name": "huge",
                        "namespace": "e2e",
                        "annotations": {"x": "y" * 1_100_000},
                    },
                },
            }
        ).encode(),
        "pod",
        "huge",
        "",
    ),
    (
        "pod.modified",
        json.dumps(
            {
                "type": "MODIFIED",
                "object": {**pod("orphan"), "spec": {"nodeName": "no-such-node", "containers": []}},
            }
        ).encode(),
        "pod",
        "orphan",
        "spec.nodeName",
    ),
]


async def test_bad_input_is_reported_and_the_informer_keeps_serving(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    processes, client, _store = cluster
    await client.publish("node", NODES[0])
    for key, body, *_ in BAD_INPUT:
        await client.publish("pod", body, key=key)
    await client.publish("pod", pod("good"))
    await client.wait_for(
        lambda: "e2e/good" in client.bindings() and len(client.errors) >= len(BAD_INPUT)
    )
    assert len(client.errors) == len(BAD_INPUT)
    for report, (_, _, kind, name, field) in zip(client.errors, BAD_INPUT, strict=True):
        assert report["kind"] == "ErrorReport"
        assert report["objectKind"] == kind
        assert report.get("name") == name
        assert report["field"] == field
        assert report["reason"]
    assert processes.children["informer"].returncode is None


async def test_the_default_plugins_decide_across_processes(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    """Taints, selectors and affinity filter the same way in the services as in simulate."""
    _, client, _ = cluster
    tainted = node("infra-1")
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}
    ssd = node("ssd-1")
    ssd["metadata"]["labels"]["disk"] = "ssd"
    for n in (tainted, ssd, node("plain-1")):
        await client.publish("node", n)
    wants_ssd = pod("wants-ssd")
    wants_ssd["spec"]["nodeSelector"] = {"disk": "ssd"}
    infra = pod("infra-agent")
    infra["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "infra"}]
    infra["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "infra-1"}
    nowhere = pod("wants-nvme")
    nowhere["spec"]["nodeSelector"] = {"disk": "nvme"}
    for p in (wants_ssd, infra, nowhere):
        await client.publish("pod", p)
    await client.wait_for(
        lambda: len(client.bindings()) >= 2 and bool(client.events_with("FailedScheduling"))
    )
    assert client.bindings() == {"e2e/wants-ssd": ["ssd-1"], "e2e/infra-agent": ["infra-1"]}
    (failed,) = client.events_with("FailedScheduling")
    assert failed["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate,"
        " preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."
    )


async def test_kill_9_of_the_informer_loses_no_event_and_binds_each_pod_once(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    """The single writer dies mid-run: the durable inbound queue keeps what it had not
    acknowledged, and on restart it repairs the store from its log and republishes."""
    processes, client, store = cluster
    await publish_cluster(client, 150)
    await client.wait_for(lambda: len(client.recorded) >= 30)
    await processes.kill9("informer")
    for i in range(150, 200):  # published while the informer is down
        await client.publish("pod", pod(f"p-{i}", cpu=CPU_PER_POD))
    await processes.start("informer")
    await client.wait_for(lambda: len(client.bindings()) >= 200, within=120)
    await assert_bound_exactly_once(client, store, 200)
    await assert_no_overcommit(client, store)
    assert await store.assumed() == {}
