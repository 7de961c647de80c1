"""ksched's resourceclaim controller against real RabbitMQ and Redis: a pod naming a
ResourceClaimTemplate yields a generated claim and the pod's status entry, on
``ksched.cluster`` (claim first, then pod) and in the Redis projection."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aio_pika
import pytest

from contracts.k8s.resource import GENERATED_BY_ANNOTATION, POD_CLAIM_NAME_ANNOTATION
from services.common.store.redis import RedisStore
from tests.integration.harness import (
    AMQP_URL,
    REDIS_URL,
    Client,
    Processes,
    delete_namespace,
    pod,
)

pytestmark = [pytest.mark.integration]

TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-gpu", "namespace": "e2e", "uid": "uid-one-gpu"},
    "spec": {
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
            }
        }
    },
}


@pytest.fixture
async def informer(tmp_path: Path) -> AsyncIterator[tuple[Client, RedisStore]]:
    namespace = f"dra{uuid.uuid4().hex[:8]}"
    processes = Processes(namespace, tmp_path)
    connection = await aio_pika.connect_robust(AMQP_URL)
    store = RedisStore(REDIS_URL, namespace=namespace)
    client = Client(connection, namespace)
    try:
        await processes.start("informer")
        await client.open()
        yield client, store
    finally:
        try:
            await processes.stop_all()
        finally:
            await delete_namespace(connection, namespace)
            await connection.close()
            await store.flush_namespace()
            await store.close()


def _claiming_pod() -> dict[str, Any]:
    obj = pod("train")
    obj["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    obj["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return obj


async def test_a_template_claim_is_generated_for_the_pod(
    informer: tuple[Client, RedisStore],
) -> None:
    client, store = informer
    await client.publish("resourceclaimtemplate", TEMPLATE)
    await client.publish("pod", _claiming_pod())

    def controller_entries() -> list[dict[str, Any]]:
        return [e for e in client.entries if e.get("origin") == "controller"]

    await client.wait_for(lambda: len(controller_entries()) >= 2, within=30)
    claim_entry, pod_entry = controller_entries()
    assert (claim_entry["kind"], claim_entry["type"]) == ("resourceclaim", "ADDED")
    assert (pod_entry["kind"], pod_entry["type"]) == ("pod", "MODIFIED")
    assert claim_entry["seq"] < pod_entry["seq"]
    claim = claim_entry["object"]
    name = claim["metadata"]["name"]
    assert name.startswith("train-gpu-") and len(name) == len("train-gpu-") + 5
    assert claim["metadata"]["annotations"] == {
        POD_CLAIM_NAME_ANNOTATION: "gpu",
        GENERATED_BY_ANNOTATION: "true",
    }
    assert claim["metadata"]["ownerReferences"][0]["uid"] == "uid-train"
    statuses = pod_entry["object"]["status"]["resourceClaimStatuses"]
    assert statuses == [{"name": "gpu", "resourceClaimName": name}]
    assert client.errors == []

    stored_claims = await store.objects("resourceclaim")
    assert list(stored_claims) == [f"e2e/{name}"]
    stored_pod = json.loads((await store.objects("pod"))["e2e/train"])
    assert stored_pod["status"]["resourceClaimStatuses"] == statuses
