"""The devices a ResourceClaim's allocation holds, as the store counts them."""

from __future__ import annotations

import msgspec

from contracts.k8s import ResourceClaim
from services.common.k8s.devices import allocated_devices, device_id
from services.framework.plugins.dynamicresources import allocator


def claim(*results: dict[str, object], allocated: bool = True) -> ResourceClaim:
    status = {"allocation": {"devices": {"results": list(results)}}} if allocated else {}
    body = {"metadata": {"name": "c", "namespace": "default"}, "status": status}
    return msgspec.json.decode(msgspec.json.encode(body), type=ResourceClaim)


def result(device: str, **extra: object) -> dict[str, object]:
    return {"request": "gpu", "driver": "gpu.example.com", "pool": "a/b", "device": device, **extra}


def test_every_exclusive_result_once_in_order() -> None:
    found = allocated_devices(
        claim(
            result("gpu-1"),
            result("gpu-0"),
            result("gpu-1"),
            result("gpu-2", adminAccess=True),
            result("gpu-3", shareID="0a1b"),
            result("gpu-4", adminAccess=False),
        )
    )
    ids = ("gpu.example.com/a/b/gpu-1", "gpu.example.com/a/b/gpu-0", "gpu.example.com/a/b/gpu-4")
    assert found == ids


def test_an_unallocated_claim_holds_nothing() -> None:
    assert allocated_devices(claim(allocated=False)) == ()
    assert allocated_devices(claim()) == ()


def test_the_id_is_the_allocators() -> None:
    assert device_id("d", "p/q", "x") == allocator.device_id("d", "p/q", "x") == "d/p/q/x"
