"""DRA across the real services (RabbitMQ, Redis, service processes): the binder
publishes a pod's claim (``claim.<namespace>``) before its Binding, two scheduler
replicas never hand out one device twice (the store's atomic assume guards devices),
and a deleted pod's device goes to the next pod. The client applies each claim
decision by publishing the claim's MODIFIED watch event, as a user applies Bindings."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.store.redis import RedisStore
from tests.integration.dra_support import (
    NAMESPACE,
    allocated_devices,
    applying_claims,
    claim,
    claim_decisions,
    claiming_pod,
    device_class,
    resource_slice,
    stored,
)
from tests.integration.harness import Client, node, running_cluster, until_true

pytestmark = [pytest.mark.integration]


async def publish_cluster(
    client: Client, devices: int, claims: list[str], *, nodes: int = 1
) -> None:
    """Nodes ``n1``… with ``devices`` GPUs each, the DeviceClass and ``claims``."""
    await client.publish("deviceclass", device_class())
    for i in range(1, nodes + 1):
        await client.publish("node", node(f"n{i}"))
        await client.publish("resourceslice", resource_slice(f"n{i}", devices))
    for name in claims:
        await client.publish("resourceclaim", claim(name))


def decided_keys(client: Client, pod: str) -> list[str]:
    """The routing keys of the decisions about ``pod``'s claim and Binding, in order."""
    out = []
    for key, body, _ in client.decisions:
        if body.get("kind") == "Binding" and body["metadata"]["name"] == pod:
            out.append(key)
        if key.startswith("claim.") and any(
            r.get("name") == pod for r in body["status"].get("reservedFor", [])
        ):
            out.append(key)
    return out


async def held_by_claims(store: RedisStore, count: int) -> dict[str, str]:
    """Wait until the store's devices are ``count``, every one held by a claim."""

    async def settled() -> bool:
        held = await store.devices()
        return len(held) == count and all(h.startswith("claim:") for h in held.values())

    await until_true(settled)
    return await store.devices()


async def test_the_claim_is_published_before_the_binding(tmp_path: Path) -> None:
    async for _, client, store in running_cluster(tmp_path, "dra"):
        async with applying_claims(client):
            await publish_cluster(client, 2, ["train-gpu"])
            await client.publish("pod", claiming_pod("train", "train-gpu"))
            await client.wait_for(lambda c=client: "e2e/train" in c.bindings())

            assert decided_keys(client, "train") == [f"claim.{NAMESPACE}", f"binding.{NAMESPACE}"]
            [published] = claim_decisions(client)
            assert published["metadata"]["name"] == "train-gpu"
            [reserved] = published["status"]["reservedFor"]
            assert (reserved["resource"], reserved["uid"]) == ("pods", "uid-train")
            [device] = allocated_devices(published)
            assert device.startswith("gpu.example.com/n1/gpu-")
            held = await held_by_claims(store, 1)
            assert held == {device: "claim:e2e/train-gpu"}
            claims = stored(await store.objects("resourceclaim"))
            assert allocated_devices(claims["e2e/train-gpu"]) == [device]


@pytest.mark.parametrize(
    ("nodes", "devices", "pods"), [(1, 2, 6), (3, 2, 60)], ids=["1x2 devices", "3x2 devices"]
)
async def test_two_replicas_never_hand_out_one_device_twice(
    tmp_path: Path, nodes: int, devices: int, pods: int
) -> None:
    """Every pod wants a device of its own: as many are bound as there are devices, each
    to another device, whichever replica placed it (the batches of the two replicas
    decide on snapshots that lack each other's reservations)."""
    names = [f"p{i}" for i in range(pods)]
    capacity = nodes * devices
    async for _, client, store in running_cluster(tmp_path, "dra2", replicas=2):
        async with applying_claims(client):
            await publish_cluster(client, devices, [f"{n}-gpu" for n in names], nodes=nodes)
            for name in names:
                await client.publish("pod", claiming_pod(name, f"{name}-gpu"))

            def settled(c: Client = client) -> bool:
                failed = {e["involvedObject"]["name"] for e in c.events_with("FailedScheduling")}
                bound = {pod.split("/")[1] for pod in c.bindings()}
                return len(bound) >= capacity and len(bound | failed) == len(names)

            await client.wait_for(settled, within=120)
            held = await held_by_claims(store, capacity)

        bindings = client.bindings()
        assert len(bindings) == capacity, bindings
        assert all(len(targets) == 1 for targets in bindings.values()), bindings
        decided = claim_decisions(client)
        given = [d for body in decided for d in allocated_devices(body)]
        assert len(given) == capacity and len(set(given)) == capacity, decided
        for body in decided:  # each device on the node its pod was bound to
            [pod] = body["status"]["reservedFor"]
            [device] = allocated_devices(body)
            assert device.split("/")[1] == bindings[f"e2e/{pod['name']}"][0]
        bound_claims = {f"e2e/{pod.split('/')[1]}-gpu" for pod in bindings}
        assert set(held.values()) == {f"claim:{c}" for c in bound_claims}
        allocated = {
            key: allocated_devices(body)
            for key, body in stored(await store.objects("resourceclaim")).items()
            if allocated_devices(body)
        }
        assert set(allocated) == bound_claims
        assert sorted(d for ds in allocated.values() for d in ds) == sorted(held)


async def test_a_deleted_pods_device_goes_to_the_next_pod(tmp_path: Path) -> None:
    """One device: ``a`` gets it, ``b`` waits. ``a`` deleted, ksched's resourceclaim
    controller (in the informer) takes it out of its claim's reservedFor and
    deallocates the claim (it carries the delete-protection finalizer DynamicResources
    set): the device is free, and ``b`` is bound to it."""
    async for _, client, store in running_cluster(tmp_path, "dra3"):
        async with applying_claims(client):
            await publish_cluster(client, 1, ["a-gpu", "b-gpu"])
            first = claiming_pod("a", "a-gpu")
            await client.publish("pod", first)
            await client.wait_for(lambda c=client: "e2e/a" in c.bindings())
            [device] = (await held_by_claims(store, 1)).keys()

            await client.publish("pod", claiming_pod("b", "b-gpu"))
            await client.wait_for(
                lambda c=client: any(
                    e["involvedObject"]["name"] == "b" for e in c.events_with("FailedScheduling")
                )
            )
            await client.publish("pod", first, "DELETED")
            await client.wait_for(lambda c=client: "e2e/b" in c.bindings(), within=60)
            held = await held_by_claims(store, 1)

        assert held == {device: "claim:e2e/b-gpu"}
        claims = stored(await store.objects("resourceclaim"))
        assert allocated_devices(claims["e2e/a-gpu"]) == []
        assert claims["e2e/a-gpu"]["status"].get("reservedFor", []) == []
        assert allocated_devices(claims["e2e/b-gpu"]) == [device]
