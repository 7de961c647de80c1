"""DRA objects for the integration tests, as the wire carries them, and the client's
part in DRA: applying each ``claim.<namespace>`` decision by publishing the claim's
MODIFIED watch event (as a client applies Bindings through the API server)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from tests.integration.harness import Client, pod

DRIVER = "gpu.example.com"
NAMESPACE = "e2e"


def device_class(name: str = "gpu") -> dict[str, Any]:
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [selector]},
    }


def resource_slice(node: str, devices: int) -> dict[str, Any]:
    """``devices`` GPUs (``gpu-0``, …) on ``node``, in pool ``node``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
        },
    }


def claim(name: str) -> dict[str, Any]:
    """A claim for one device of class ``gpu`` (request ``gpu``)."""
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [request]}},
    }


def claiming_pod(name: str, claim_name: str) -> dict[str, Any]:
    """:func:`harness.pod` with ``spec.resourceClaims: [{name: gpu, resourceClaimName}]``
    and its container using it."""
    p = pod(name)
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return p


def claim_decisions(client: Client) -> list[dict[str, Any]]:
    """Every claim the client received on ``claim.<namespace>``, in order."""
    return [body for key, body, _ in client.decisions if key.startswith("claim.")]


def allocated_devices(claim_body: dict[str, Any]) -> list[str]:
    results = (claim_body.get("status", {}).get("allocation") or {}).get("devices", {})
    return [f"{r['driver']}/{r['pool']}/{r['device']}" for r in results.get("results", [])]


@contextlib.asynccontextmanager
async def applying_claims(client: Client) -> AsyncIterator[list[dict[str, Any]]]:
    """While inside: publish every claim decision's MODIFIED watch event as it arrives
    (the API server storing the update). Yields the claims applied, in order."""
    applied: list[dict[str, Any]] = []

    async def apply() -> None:
        while True:
            for body in claim_decisions(client)[len(applied) :]:
                await client.publish("resourceclaim", body, "MODIFIED")
                applied.append(body)
            client.arrived.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    await client.arrived.wait()

    task = asyncio.create_task(apply())
    try:
        yield applied
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def stored(objects: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {key: json.loads(body) for key, body in objects.items()}
