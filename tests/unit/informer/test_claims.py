"""ksched's resourceclaim controller in the informer: a claim generated from a template
for a pod (named as upstream's generateName), the pod's status entry, in the log in
that order with origin ``controller``; nothing without the template until it arrives;
reservations released, the claim deallocated and deleted when its pod ends."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from contracts import topology
from contracts.events import LogEntry
from contracts.k8s import (
    ObjectMeta,
    OwnerReference,
    Pod,
    PodExtendedResourceClaimStatus,
    ResourceClaim,
    ResourceClaimTemplate,
)
from contracts.k8s.pod import PodResourceClaim
from contracts.k8s.resource import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    FINALIZER,
    GENERATED_BY_ANNOTATION,
    POD_CLAIM_NAME_ANNOTATION,
    AllocationResult,
    DeviceClaim,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourceClaimTemplateSpec,
)
from contracts.kinds import KubeObject, kind_of
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.store.memory import MemoryStore
from services.informer.claims import ALPHANUMS, generate_name
from services.informer.service import InformerService
from tests.builders import make_node, make_pod

SPEC = ResourceClaimSpec(
    devices=DeviceClaim(
        requests=[DeviceRequest(name="gpu", exactly=ExactDeviceRequest(device_class_name="gpu"))]
    )
)
TEMPLATE = ResourceClaimTemplate(
    metadata=ObjectMeta(name="one-gpu", namespace="ml", uid="t1"),
    spec=ResourceClaimTemplateSpec(
        metadata=ObjectMeta(labels={"team": "a"}, annotations={"note": "x"}), spec=SPEC
    ),
)


def claiming_pod(name: str = "train", uid: str = "p1", **fields: Any) -> Pod:
    pod = make_pod(name, "ml", uid=uid, **fields)
    spec = msgspec.structs.replace(
        pod.spec,
        resource_claims=[PodResourceClaim(name="gpu", resource_claim_template_name="one-gpu")],
    )
    return msgspec.structs.replace(pod, spec=spec)


def event(obj: KubeObject, type_: str = "ADDED") -> Message:
    body = msgspec.json.encode({"type": type_, "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind_of(obj), type_), body)


class Cluster:
    def __init__(self) -> None:
        self.bus, self.store, self.log = MemoryBus(), MemoryStore(), MemoryEventLog()
        self.informer = InformerService(
            self.bus, self.store, self.log, FakeClock(), rng=random.Random(7)
        )

    async def publish(self, *messages: Message) -> list[LogEntry]:
        """The log entries the messages added."""
        last = self.log.last_seq()
        await self.bus.publish(list(messages))
        await self.bus.wait_idle()
        return [e async for e in self.log.read(after=last)]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster()
    await c.informer.start()
    yield c
    await c.informer.stop()
    await c.bus.close()


def summary(entries: list[LogEntry]) -> list[tuple[str, str, str, str]]:
    return [
        (str(e.__struct_config__.tag), e.type, e.object.metadata.name, e.origin) for e in entries
    ]


async def test_a_template_claim_is_generated_then_the_pod_status_set(cluster: Cluster) -> None:
    await cluster.publish(event(TEMPLATE))
    entries = await cluster.publish(event(claiming_pod()))
    claim_name = entries[1].object.metadata.name
    assert summary(entries) == [
        ("pod", "ADDED", "train", "user"),
        ("resourceclaim", "ADDED", claim_name, "controller"),
        ("pod", "MODIFIED", "train", "controller"),
    ]
    claim = entries[1].object
    assert isinstance(claim, ResourceClaim)
    assert claim_name.startswith("train-gpu-") and len(claim_name) == len("train-gpu-") + 5
    assert set(claim_name[-5:]) <= set(ALPHANUMS)
    meta = claim.metadata
    assert meta.namespace == "ml" and meta.generate_name == "train-gpu-"
    assert meta.labels == {"team": "a"}
    assert meta.annotations == {
        "note": "x",
        POD_CLAIM_NAME_ANNOTATION: "gpu",
        GENERATED_BY_ANNOTATION: "true",
    }
    (owner,) = meta.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid) == ("v1", "Pod", "train", "p1")
    assert owner.controller is True and owner.block_owner_deletion is True
    assert claim.spec == SPEC
    pod = entries[2].object
    assert isinstance(pod, Pod)
    assert [(s.name, s.resource_claim_name) for s in pod.status.resource_claim_statuses] == [
        ("gpu", claim_name)
    ]
    assert sorted(await cluster.store.objects("resourceclaim")) == [f"ml/{claim_name}"]


async def test_a_missing_template_waits_for_the_template(cluster: Cluster) -> None:
    entries = await cluster.publish(event(claiming_pod()))
    assert summary(entries) == [("pod", "ADDED", "train", "user")]
    entries = await cluster.publish(event(TEMPLATE))
    assert [(kind, type_, origin) for kind, type_, _, origin in summary(entries)] == [
        ("resourceclaimtemplate", "ADDED", "user"),
        ("resourceclaim", "ADDED", "controller"),
        ("pod", "MODIFIED", "controller"),
    ]


async def test_a_pod_update_without_the_status_finds_the_generated_claim(
    cluster: Cluster,
) -> None:
    await cluster.publish(event(TEMPLATE))
    first = await cluster.publish(event(claiming_pod()))
    again = await cluster.publish(event(claiming_pod(labels={"v": "2"}), "MODIFIED"))
    assert summary(again) == [
        ("pod", "MODIFIED", "train", "user"),
        ("pod", "MODIFIED", "train", "controller"),  # the same claim: none generated
    ]
    before, after = first[2].object, again[1].object
    assert isinstance(before, Pod) and isinstance(after, Pod)
    assert after.status.resource_claim_statuses == before.status.resource_claim_statuses


async def test_a_deleted_pod_releases_deallocates_and_deletes_its_claim(
    cluster: Cluster,
) -> None:
    await cluster.publish(event(TEMPLATE))
    entries = await cluster.publish(event(claiming_pod()))
    claim, pod = entries[1].object, entries[2].object
    assert isinstance(claim, ResourceClaim)
    reserved = msgspec.structs.replace(
        claim,
        metadata=msgspec.structs.replace(claim.metadata, finalizers=[FINALIZER]),
        status=ResourceClaimStatus(
            allocation=AllocationResult(),
            reserved_for=[ResourceClaimConsumerReference(resource="pods", name="train", uid="p1")],
        ),
    )
    await cluster.publish(event(reserved, "MODIFIED"))
    gone = await cluster.publish(event(pod, "DELETED"))
    assert summary(gone) == [
        ("pod", "DELETED", "train", "user"),
        ("resourceclaim", "MODIFIED", claim.metadata.name, "controller"),
        ("resourceclaim", "DELETED", claim.metadata.name, "controller"),
    ]
    released = gone[1].object
    assert isinstance(released, ResourceClaim)
    assert released.status.reserved_for == [] and released.status.allocation is None
    assert released.metadata.finalizers == []
    assert await cluster.store.objects("resourceclaim") == {}


async def test_a_finished_pod_releases_a_shared_claim_but_keeps_it(cluster: Cluster) -> None:
    shared = ResourceClaim(
        metadata=ObjectMeta(name="shared", namespace="ml", uid="c1", finalizers=[FINALIZER]),
        spec=SPEC,
        status=ResourceClaimStatus(
            allocation=AllocationResult(),
            reserved_for=[
                ResourceClaimConsumerReference(resource="pods", name="a", uid="pa"),
                ResourceClaimConsumerReference(resource="pods", name="b", uid="pb"),
            ],
        ),
    )

    def user(name: str, uid: str, **fields: Any) -> Pod:
        pod = make_pod(name, "ml", uid=uid, node_name="n1", **fields)
        claims = [PodResourceClaim(name="gpu", resource_claim_name="shared")]
        return msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, resource_claims=claims)
        )

    await cluster.publish(event(make_node("n1")), event(shared), event(user("a", "pa")))
    await cluster.publish(event(user("b", "pb")))
    done = await cluster.publish(event(user("a", "pa", phase="Succeeded"), "MODIFIED"))
    assert summary(done) == [
        ("pod", "MODIFIED", "a", "user"),
        ("resourceclaim", "MODIFIED", "shared", "controller"),
    ]
    kept = done[1].object
    assert isinstance(kept, ResourceClaim)
    assert [r.name for r in kept.status.reserved_for] == ["b"]
    assert kept.status.allocation is not None  # still used by b
    last = await cluster.publish(event(user("b", "pb"), "DELETED"))
    final = last[1].object
    assert isinstance(final, ResourceClaim)
    assert final.status.reserved_for == [] and final.status.allocation is None
    assert len(last) == 2  # not generated for a pod: never deleted by ksched


async def test_replay_mode_generates_nothing() -> None:
    c = Cluster()
    c.informer = InformerService(c.bus, c.store, c.log, FakeClock(), generate_claims=False)
    await c.informer.start()
    try:
        await c.publish(event(TEMPLATE))
        entries = await c.publish(event(claiming_pod()))
        assert summary(entries) == [("pod", "ADDED", "train", "user")]
    finally:
        await c.informer.stop()
        await c.bus.close()


@pytest.mark.parametrize(
    ("pod", "claim", "expected"),
    [
        ("train", "gpu", "train-gpu-"),
        ("p" * 40, "c" * 30, "p" * 31 + "-" + "c" * 23),
        ("p" * 100, "gpu", "p" * 54 + "-" + "g"),  # 100 * 57 // 105, 3 * 57 // 105
        ("p" * 250, "c" * 60, "p" * 45 + "-" + "c" * 10),
    ],
)
def test_generated_names_are_shortened_as_upstream(pod: str, claim: str, expected: str) -> None:
    name = generate_name(pod, claim, random.Random(1))
    assert name[:-5] == expected
    assert len(name) <= 63


def extended_claim(owner: Pod) -> ResourceClaim:
    """The claim DynamicResources created for ``owner``'s extended resources, allocated
    and reserved for it (DRAExtendedResource)."""
    meta = ObjectMeta(
        name=f"{owner.metadata.name}-extended-resources-bcdfg",
        namespace="ml",
        uid="x1",
        annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        finalizers=[FINALIZER],
        owner_references=[
            OwnerReference(
                api_version="v1",
                kind="Pod",
                name=owner.metadata.name,
                uid=owner.metadata.uid,
                controller=True,
            )
        ],
    )
    consumer = ResourceClaimConsumerReference(
        resource="pods", name=owner.metadata.name, uid=owner.metadata.uid
    )
    status = ResourceClaimStatus(allocation=AllocationResult(), reserved_for=[consumer])
    return ResourceClaim(metadata=meta, spec=SPEC, status=status)


@pytest.mark.parametrize("status_applied", [True, False], ids=["by-status", "by-owner"])
async def test_a_deleted_pod_deletes_its_extended_resource_claim(
    cluster: Cluster, status_applied: bool
) -> None:
    """Found by ``status.extendedResourceClaimStatus``, or, before the pod's status patch
    is applied, by its annotation and owner: released, deallocated, deleted."""
    pod = make_pod("job", "ml", uid="p9", node_name="n1")
    claim = extended_claim(pod)
    if status_applied:
        status = msgspec.structs.replace(
            pod.status,
            extended_resource_claim_status=PodExtendedResourceClaimStatus(
                resource_claim_name=claim.metadata.name
            ),
        )
        pod = msgspec.structs.replace(pod, status=status)
    await cluster.publish(event(make_node("n1")), event(pod), event(claim))
    gone = await cluster.publish(event(pod, "DELETED"))
    assert summary(gone) == [
        ("pod", "DELETED", "job", "user"),
        ("resourceclaim", "MODIFIED", claim.metadata.name, "controller"),
        ("resourceclaim", "DELETED", claim.metadata.name, "controller"),
    ]
    assert await cluster.store.objects("resourceclaim") == {}
