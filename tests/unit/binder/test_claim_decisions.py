"""DynamicResources' PreBind leaves each claim it allocated as a ClaimStatusEffect: the
binder publishes it on ksched.decisions (``claim.<namespace>``, the ResourceClaim JSON
with its allocation and the pod in reservedFor) before the pod's Binding, in the same
confirmed publish. Here a fake PreBind plugin stands in for DynamicResources."""

from __future__ import annotations

import msgspec

from contracts import topology
from contracts.k8s import (
    ContainerExtendedResourceRequest,
    PodExtendedResourceClaimStatus,
    ResourceClaim,
)
from contracts.messages import BindBatch, BindRequest, ResultBatch
from contracts.podstatus import PodStatusPatch
from services.binder.service import BinderService
from services.common.bus import Message
from services.common.clock import FakeClock
from services.common.decisions import ATTEMPT_HEADER
from services.common.store.memory import MemoryStore
from services.framework.api.effects import ClaimStatusEffect, PodStatusEffect
from services.framework.api.interface import CycleState, PreBindPlugin
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo
from services.framework.config import PluginRef, Plugins, PluginSet, Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.profile import merge_plugins
from tests.builders import make_node, make_pod
from tests.builders.scheduling import store_node
from tests.unit.binder.support import RecordingBus, assume_on

NAME = "FakeClaims"
PROFILE = "default-scheduler"


def allocated(name: str, pod_name: str, pod_uid: str, device: str) -> ResourceClaim:
    claim = {
        "metadata": {"name": name, "namespace": "ml", "uid": f"c-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.example.com",
                            "pool": "n1",
                            "device": device,
                        }
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": pod_name, "uid": pod_uid}],
        },
    }
    return msgspec.json.decode(msgspec.json.encode(claim), type=ResourceClaim)


def extended_status(pod: PodInfo, claim: ResourceClaim) -> PodStatusPatch:
    mapping = ContainerExtendedResourceRequest(
        container_name="c0", resource_name="example.com/gpu", request_name="container-0-request-0"
    )
    return PodStatusPatch(
        namespace="ml",
        name=pod.pod.metadata.name,
        uid=pod.uid,
        plugin="DynamicResources",
        scheduler_name=PROFILE,
        extended_resource_claim_status=PodExtendedResourceClaimStatus(
            request_mappings=[mapping], resource_claim_name=claim.metadata.name
        ),
    )


class FakeClaims(PreBindPlugin):
    name = NAME

    def __init__(self, claims: dict[str, list[ResourceClaim]]) -> None:
        self.claims = claims
        """Pod uid → the claims its PreBind leaves."""

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Leaves the pod's claims; a pod named ``fail`` fails after leaving them. A
        claim named ``<pod>-extended-resources-…`` is the pod's extended-resource claim:
        the pod's status patch follows it, as DynamicResources leaves them."""
        for claim in self.claims.get(pod.uid, ()):
            state.effects.append(ClaimStatusEffect(claim))
            if "-extended-resources-" in claim.metadata.name:
                state.effects.append(PodStatusEffect(extended_status(pod, claim)))
        if pod.pod.metadata.name == "fail":
            return Status(Code.Error, ("the API server refused the claim's update",))
        return SUCCESS


def binder(bus: RecordingBus, store: MemoryStore, plugin: FakeClaims) -> BinderService:
    registry = dict(in_tree_registry())
    registry[NAME] = PluginEntry(NAME, FakeClaims, lambda _args, _handle: plugin)
    custom = Plugins(pre_bind=PluginSet((PluginRef(NAME),)))
    base = default_profile()
    profile = Profile(base.scheduler_name, merge_plugins(base.plugins, custom))
    return BinderService(bus, store, FakeClock(), [profile], registry=registry)


def request(name: str) -> BindRequest:
    return BindRequest(
        uid=f"uid-{name}", namespace="ml", name=name, node="n1", attempt=1, profile=PROFILE
    )


async def bind(claims: dict[str, list[ResourceClaim]], names: list[str]) -> list[Message]:
    """Bind the pods ``names`` (namespace ml, assumed on n1) with ``claims`` left by
    PreBind; the binder's publish that carries decisions."""
    pods = [make_pod(n, "ml", uid=f"uid-{n}") for n in names]
    bus, store = RecordingBus(), MemoryStore()
    service = binder(bus, store, FakeClaims(claims))
    await service.start()
    try:
        await store_node(store, make_node("n1"))
        await assume_on(store, pods, "n1")
        bus.batches.clear()
        body = msgspec.json.encode(BindBatch(requests=[request(n) for n in names]))
        await bus.publish([Message(topology.BIND.name, topology.BIND_KEY, body)])
        await bus.wait_idle()
    finally:
        await service.stop()
        await bus.close()
    (publish,) = [b for b in bus.batches if any(m.exchange == topology.RESULTS.name for m in b)]
    return publish


async def test_each_claim_goes_out_before_its_pods_binding() -> None:
    claims = {
        "uid-a": [allocated("a-gpu", "a", "uid-a", "gpu-0"), allocated("a-nic", "a", "uid-a", "n")],
        "uid-c": [allocated("c-gpu", "c", "uid-c", "gpu-1")],
    }
    publish = await bind(claims, ["a", "b", "c"])
    decisions = [m for m in publish if m.routing_key.startswith(("claim.", "binding."))]
    assert [m.routing_key for m in decisions] == [
        "claim.ml",
        "claim.ml",
        "binding.ml",
        "binding.ml",
        "claim.ml",
        "binding.ml",
    ]
    sent = [
        msgspec.json.decode(m.body, type=ResourceClaim)
        for m in decisions
        if m.routing_key == "claim.ml"
    ]
    assert sent == [*claims["uid-a"], *claims["uid-c"]]
    assert b'"reservedFor":[{' in decisions[0].body and b'"allocation":{' in decisions[0].body
    assert decisions[0].headers == decisions[2].headers  # the Binding's: attempt, trace
    assert decisions[0].headers[ATTEMPT_HEADER] == "1"


async def test_a_failed_binding_cycle_publishes_no_claim() -> None:
    publish = await bind({"uid-fail": [allocated("f-gpu", "fail", "uid-fail", "gpu-0")]}, ["fail"])
    decisions = [m.routing_key for m in publish if m.exchange == topology.DECISIONS.name]
    assert decisions == ["event.ml"]  # FailedScheduling: no claim, no Binding
    [result] = msgspec.json.decode(
        next(m.body for m in publish if m.exchange == topology.RESULTS.name), type=ResultBatch
    ).results
    assert result.outcome == "error"


async def test_the_extended_resource_claim_then_the_pods_status_then_its_binding() -> None:
    """DRAExtendedResource: the created claim (``claim.<ns>``), then the pod's
    ``status.extendedResourceClaimStatus`` (``status.<ns>``, a PodStatusPatch), then the
    Binding, in one confirmed publish with the Binding's headers."""
    claim = allocated("x-extended-resources-b4k2z", "x", "uid-x", "gpu-0")
    publish = await bind({"uid-x": [claim]}, ["x"])
    decisions = [m for m in publish if m.routing_key.startswith(("claim.", "status.", "binding."))]
    assert [m.routing_key for m in decisions] == ["claim.ml", "status.ml", "binding.ml"]
    patch = msgspec.json.decode(decisions[1].body, type=PodStatusPatch)
    assert patch.extended_resource_claim_status is not None
    assert patch.extended_resource_claim_status.resource_claim_name == claim.metadata.name
    assert (patch.namespace, patch.name, patch.uid) == ("ml", "x", "uid-x")
    assert b'"extendedResourceClaimStatus":{"requestMappings":[{"containerName":"c0"' in (
        decisions[1].body
    )
    assert decisions[1].headers == decisions[2].headers


async def test_a_failed_binding_cycle_publishes_no_pod_status() -> None:
    claim = allocated("fail-extended-resources-b4k2z", "fail", "uid-fail", "gpu-0")
    publish = await bind({"uid-fail": [claim]}, ["fail"])
    decisions = [m.routing_key for m in publish if m.exchange == topology.DECISIONS.name]
    assert decisions == ["event.ml"]
