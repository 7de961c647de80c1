"""DRA binding conditions across the real services (RabbitMQ, Redis, service
processes): a device with ``bindingConditions`` makes the binder publish the pod's claim
first and bind only once the client has published the claim MODIFIED with the condition
True; a binding failure condition fails the binding cycle, and the pod's next attempt
deallocates the claim (PostFilter's ``claim.<namespace>`` decision, applied by the
client), which frees the device for the attempt after."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

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

READY, FAILED = "example.com/attached", "example.com/attach-failed"


def conditional_slice(node_name: str) -> dict[str, Any]:
    """One GPU on ``node_name`` that is usable only once its driver says ``READY``."""
    body = resource_slice(node_name, 1)
    for device in body["spec"]["devices"]:
        device["bindingConditions"] = [READY]
        device["bindingFailureConditions"] = [FAILED]
    return body


async def publish_cluster(client: Client) -> None:
    await client.publish("deviceclass", device_class())
    await client.publish("node", node("n1"))
    await client.publish("resourceslice", conditional_slice("n1"))
    await client.publish("resourceclaim", claim("train-gpu"))
    await client.publish("pod", claiming_pod("train", "train-gpu"))


def reported(published: dict[str, Any], ready: str, failed: str) -> dict[str, Any]:
    """The claim as the driver updates it: its device's conditions in ``status.devices``."""
    body = copy.deepcopy(published)
    [result] = body["status"]["allocation"]["devices"]["results"]
    conditions = [
        {
            "type": READY,
            "status": ready,
            "reason": "Driver",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
        {
            "type": FAILED,
            "status": failed,
            "reason": "Driver",
            "message": "no link",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
    ]
    device = {k: result[k] for k in ("driver", "pool", "device")}
    body["status"]["devices"] = [{**device, "conditions": conditions}]
    return body


async def claim_applied(store: RedisStore) -> dict[str, Any]:
    """Wait until the store holds the claim allocated (the client applied PreBind's)."""

    async def allocated() -> bool:
        claims = stored(await store.objects("resourceclaim"))
        return bool(allocated_devices(claims.get(f"{NAMESPACE}/train-gpu", {})))

    await until_true(allocated)
    return stored(await store.objects("resourceclaim"))[f"{NAMESPACE}/train-gpu"]


def pending_events(client: Client) -> list[dict[str, Any]]:
    return client.events_with("BindingConditionsPending")


async def test_the_pod_binds_only_once_the_claim_reports_its_condition(tmp_path: Path) -> None:
    async for _, client, store in running_cluster(tmp_path, "drabc"):
        async with applying_claims(client):
            await publish_cluster(client)
            await client.wait_for(lambda c=client: bool(pending_events(c)))
            [published] = claim_decisions(client)
            applied = await claim_applied(store)
            assert [r["name"] for r in applied["status"]["reservedFor"]] == ["train"]
            assert client.bindings() == {}  # the claim is in, its device is not ready

            await client.publish("resourceclaim", reported(applied, "False", "False"), "MODIFIED")
            await client.publish("resourceclaim", reported(applied, "True", "False"), "MODIFIED")
            await client.wait_for(lambda c=client: f"{NAMESPACE}/train" in c.bindings())

        [event] = pending_events(client)
        assert event["message"] == "waiting for binding conditions for device on node n1"
        keys = [key for key, _, _ in client.decisions]
        assert keys.index(f"claim.{NAMESPACE}") < keys.index(f"binding.{NAMESPACE}")
        assert claim_decisions(client) == [published]  # published once, before the wait
        assert client.bindings() == {f"{NAMESPACE}/train": ["n1"]}


async def test_a_failed_binding_frees_the_claim_for_the_next_attempt(tmp_path: Path) -> None:
    async for _, client, store in running_cluster(tmp_path, "drabf"):
        async with applying_claims(client):
            await publish_cluster(client)
            await client.wait_for(lambda c=client: bool(pending_events(c)))
            applied = await claim_applied(store)
            await client.publish("resourceclaim", reported(applied, "False", "True"), "MODIFIED")

            def deallocated(c: Client = client) -> bool:
                return any(not allocated_devices(body) for body in claim_decisions(c))

            await client.wait_for(deallocated, within=90)
            # The device is free again (store and snapshots): the pod's next attempt
            # allocates it anew and waits for its condition again.
            await client.wait_for(lambda c=client: len(pending_events(c)) >= 2, within=90)

        failed = [e["message"] for e in client.events_with("FailedScheduling")]
        binding_failed = (
            'running PreBind plugin "DynamicResources": claim train-gpu binding failed: '
            'reason=Driver, message="no link"'
        )
        assert failed[0] == binding_failed
        assert any("deallocation of ResourceClaim completed" in m for m in failed[1:])
        [freed] = [body for body in claim_decisions(client) if not allocated_devices(body)]
        assert freed["status"].get("reservedFor", []) == []
        assert freed["status"].get("devices", []) == []
        assert f"{NAMESPACE}/train" not in client.bindings()
        allocations = [allocated_devices(b) for b in claim_decisions(client)]
        assert allocations[:3] == [["gpu.example.com/n1/gpu-0"], [], ["gpu.example.com/n1/gpu-0"]]
