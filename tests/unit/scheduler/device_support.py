"""DRA in the scheduler's tests. A stand-in for DynamicResources (:class:`FakeDevices`):
each node has a list of devices, a pod asking for one (label ``test/devices: "1"``)
fits a node with a device that is neither reserved here nor held elsewhere (the
Handle's listers), and Reserve takes the first such device into
``CycleState.reserved_devices``. And objects for the real plugin: a DeviceClass, a
node's slice of GPUs, claims and pods naming them (:func:`dra_objects`)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from contracts.k8s import DeviceClass, Pod, PodResourceClaim, ResourceClaim, ResourceSlice
from services.framework.api.interface import (
    CycleState,
    FilterPlugin,
    FilterResult,
    Handle,
    ReservePlugin,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.cache.snapshot import Snapshot
from services.framework.config import PluginRef, Plugins, PluginSet, Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.framework.runtime.profile import merge_plugins
from tests.builders import make_pod

WANTS = "test/devices"
NAME = "FakeDevices"
NO_DEVICE = Status(Code.Unschedulable, ("cannot allocate all claims",))


def device_pod(name: str) -> Pod:
    return make_pod(name, uid=f"uid-{name}", labels={WANTS: "1"})


@dataclass
class FakeDevices(FilterPlugin, ReservePlugin):
    """``devices``: node → its devices (``driver/pool/device``). ``blind``: the
    mutation that ignores what is held elsewhere."""

    devices: Mapping[str, Sequence[str]]
    handle: Handle
    blind: bool = False
    name: str = NAME
    reserved: dict[str, str] = field(default_factory=dict)
    """Pod uid → the device this replica reserved for it."""

    def _free(self, node: str) -> list[str]:
        taken = set(self.reserved.values())
        if not self.blind:
            taken |= self.handle.listers.devices_held_elsewhere(self.handle.now())
        return [d for d in self.devices.get(node, ()) if d not in taken]

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        if WANTS not in pod.pod.metadata.labels:
            return FilterResult.all_passed(nodes.num_nodes)
        passed = np.array([bool(self._free(n)) for n in nodes.names], dtype=np.bool_)
        return FilterResult.uniform(passed, NO_DEVICE)

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        if WANTS not in pod.pod.metadata.labels:
            return SUCCESS
        free = self._free(node)
        if not free:
            return NO_DEVICE
        self.reserved[pod.uid] = free[0]
        state.reserved_devices.append(free[0])
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.reserved.pop(pod.uid, None)


def device_framework(
    cache: Cache, devices: Mapping[str, Sequence[str]], *, now: float, blind: bool = False
) -> Framework:
    """The default profile plus :class:`FakeDevices` at Filter and Reserve, reading
    ``cache``'s listers at the fixed time ``now``."""
    registry = dict(in_tree_registry())
    registry[NAME] = PluginEntry(
        NAME, FakeDevices, lambda _args, handle: FakeDevices(devices, handle, blind)
    )
    custom = Plugins(filter=PluginSet((PluginRef(NAME),)), reserve=PluginSet((PluginRef(NAME),)))
    base = default_profile()
    profile = Profile(base.scheduler_name, merge_plugins(base.plugins, custom))
    return Framework(
        profile, registry, listers=cache.listers, rng=random.Random(0), now=lambda: now
    )


DRIVER = "gpu.example.com"


def dra_objects(
    node: str, devices: int, claims: Sequence[str], *, shared: bool = False
) -> dict[str, list[object]]:
    """For the listers: DeviceClass ``gpu``, a slice of ``devices`` GPUs on ``node`` (pool
    ``node``) and an unallocated claim ``default/<name>`` for one GPU per name. With
    ``shared`` every GPU allows multiple allocations and has a ``bandwidth`` of 2, of
    which each claim asks 1 (DRAConsumableCapacity)."""
    cls = {"metadata": {"name": "gpu"}, "spec": {"selectors": []}}
    sharing: dict[str, object] = {}
    asking: dict[str, object] = {}
    if shared:
        sharing = {"allowMultipleAllocations": True, "capacity": {"bandwidth": {"value": "2"}}}
        asking = {"capacity": {"requests": {"bandwidth": "1"}}}
    slice_ = {
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", **sharing} for i in range(devices)],
        },
    }
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu", **asking}}
    made: list[object] = [
        _decode(
            {
                "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                "spec": {"devices": {"requests": [request]}},
            },
            ResourceClaim,
        )
        for name in claims
    ]
    return {
        "deviceclass": [_decode(cls, DeviceClass)],
        "resourceslice": [_decode(slice_, ResourceSlice)],
        "resourceclaim": made,
    }


def claiming_pod(name: str, claim: str) -> Pod:
    """Pod ``default/<name>`` (uid ``uid-<name>``) with the claim ``claim`` as ``gpu``."""
    pod = make_pod(name, uid=f"uid-{name}")
    spec = msgspec.structs.replace(
        pod.spec,
        resource_claims=[PodResourceClaim(name="gpu", resource_claim_name=claim)],
    )
    return msgspec.structs.replace(pod, spec=spec)


def _decode(body: dict[str, object], kind: type[Any]) -> Any:
    return msgspec.json.decode(msgspec.json.encode(body), type=kind)
