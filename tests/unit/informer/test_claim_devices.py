"""The informer projects a ResourceClaim's allocation as the devices the claim holds in
the store (store.base: DRA devices), from the log as from a rebuild."""

from __future__ import annotations

import msgspec

from contracts import topology
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService

ALLOCATION = {
    "devices": {
        "results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"},
            {
                "request": "watch",
                "driver": "gpu.example.com",
                "pool": "n1",
                "device": "gpu-1",
                "adminAccess": True,
            },
        ]
    }
}


def claim_event(type_: str, allocation: object | None) -> Message:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "default", "uid": "c-1"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]}},
        "status": {"allocation": allocation} if allocation else {},
    }
    body = msgspec.json.encode({"type": type_, "object": claim})
    return Message(topology.EVENTS.name, topology.event_key("resourceclaim", type_), body)


async def test_an_allocated_claim_holds_its_devices_until_deallocated() -> None:
    bus, store, log = MemoryBus(), MemoryStore(), MemoryEventLog()
    informer = InformerService(bus, store.client(), log, FakeClock())
    await informer.start()
    try:
        await bus.publish([claim_event("ADDED", None), claim_event("MODIFIED", ALLOCATION)])
        await bus.wait_idle()
        assert await store.devices() == {"gpu.example.com/n1/gpu-0": "claim:default/gpu"}

        store.flush()  # lost: the informer rebuilds it from the log
        await informer.catch_up()
        assert await store.client().devices() == {"gpu.example.com/n1/gpu-0": "claim:default/gpu"}

        await bus.publish([claim_event("MODIFIED", None)])
        await bus.wait_idle()
        assert await store.client().devices() == {}
    finally:
        await informer.stop()
        await bus.close()
