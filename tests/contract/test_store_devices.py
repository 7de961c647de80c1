"""The ClusterStore contract for DRA devices (``Reservation.devices`` and the claims'
allocations from the log), run against MemoryStore and RedisStore alike: a device is
held by one pod's reservation or one allocated claim at a time, so two replicas never
hand out one device twice."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from services.common.store import ClusterStore, Epoch, Reservation
from tests.contract.store_support import (
    NOW,
    TTL,
    Clients,
    assume_one,
    claim,
    claim_entry,
    node_entry,
    pod_entry,
    res,
    usage,
)

GPU0, GPU1, GPU2 = (f"gpu.example.com/pool-a/gpu-{i}" for i in range(3))
NIC = "nic.example.com/racks/r1/nic-0"
"""A pool name may hold slashes."""


def wants(reservation: Reservation, devices: tuple[str, ...]) -> Reservation:
    return dataclasses.replace(reservation, devices=devices)


async def cluster(store: ClusterStore, *pods: str) -> None:
    """Nodes n1 and n2 (1000m cpu, 10 pods) at seq 1-2, and leases for ``pods``."""
    await store.apply(
        [node_entry(1, "n1", cpu=1000, pods=10), node_entry(2, "n2", cpu=1000, pods=10)]
    )
    await store.set_leases({f"uid-{p}": 1 for p in pods})


async def test_a_reservation_holds_its_devices(store: ClusterStore) -> None:
    await cluster(store, "a")
    assert (await assume_one(store, wants(res("a", "n1"), (GPU0, NIC, GPU0)))).status == "assumed"
    assert await store.devices() == {GPU0: "pod:uid-a", NIC: "pod:uid-a"}


async def test_a_device_another_pod_holds_refuses_the_reservation(store: ClusterStore) -> None:
    await cluster(store, "a", "b")
    await assume_one(store, wants(res("a", "n1"), (GPU0, GPU1)))
    answer = await assume_one(store, wants(res("b", "n2", cpu=100), (GPU2, GPU1)))
    assert (answer.status, answer.reason, answer.devices) == (
        "conflict",
        f"device {GPU1} is already allocated",
        (GPU1,),
    )
    assert await usage(store, "n2") == {}  # nothing charged, nothing held
    assert await store.devices() == {GPU0: "pod:uid-a", GPU1: "pod:uid-a"}

    answer = await assume_one(store, wants(res("b", "n2"), (GPU1, GPU0)))
    assert (answer.reason, answer.devices) == (
        f"devices {GPU1}, {GPU0} are already allocated",
        (GPU1, GPU0),
    )


async def test_a_later_reservation_of_the_same_call_sees_the_earlier_hold(
    store: ClusterStore,
) -> None:
    await cluster(store, "a", "b")
    answers = await store.assume(
        [wants(res("a", "n1"), (GPU0,)), wants(res("b", "n2"), (GPU0,))], NOW
    )
    assert [a.status for a in answers] == ["assumed", "conflict"]
    assert answers[1].devices == (GPU0,)


async def test_assumed_again_the_pod_keeps_its_devices(store: ClusterStore) -> None:
    await cluster(store, "a")
    await assume_one(store, wants(res("a", "n1"), (GPU0,)))
    assert (await assume_one(store, wants(res("a", "n1"), (GPU0,)))).status == "assumed"
    assert await store.devices() == {GPU0: "pod:uid-a"}


async def test_a_newer_attempt_elsewhere_holds_only_its_own_devices(store: ClusterStore) -> None:
    await cluster(store, "a")
    await assume_one(store, wants(res("a", "n1"), (GPU0,)))
    await store.set_leases({"uid-a": 2})
    assert (await assume_one(store, wants(res("a", "n2", 2), (GPU1,)))).status == "assumed"
    assert await store.devices() == {GPU1: "pod:uid-a"}


async def test_forget_releases_the_devices(store: ClusterStore) -> None:
    await cluster(store, "a", "b")
    await assume_one(store, wants(res("a", "n1"), (GPU0,)))
    await store.forget([claim("a", "n1")])
    assert await store.devices() == {}
    assert (await assume_one(store, wants(res("b", "n2"), (GPU0,)))).status == "assumed"


async def test_an_expired_reservation_holds_its_devices_no_more(store: ClusterStore) -> None:
    """Released by the next reservation that wants one of them, on whatever node."""
    await cluster(store, "a", "b")
    await assume_one(store, wants(res("a", "n1"), (GPU0, GPU1)))
    later = NOW + TTL + 1
    assert (await assume_one(store, wants(res("b", "n2"), (GPU0,)), later)).status == "assumed"
    assert await store.devices() == {GPU0: "pod:uid-b"}
    assert await store.assumed() == {"uid-b": (await store.assumed())["uid-b"]}
    assert await usage(store, "n1") == {}


async def test_a_binding_reservation_never_expires_nor_its_devices(store: ClusterStore) -> None:
    await cluster(store, "a", "b")
    await assume_one(store, wants(res("a", "n1"), (GPU0,)))
    assert await store.begin_bind([claim("a", "n1")], NOW) == [True]
    answer = await assume_one(store, wants(res("b", "n2"), (GPU0,)), NOW + 10 * TTL)
    assert (answer.status, answer.devices) == ("conflict", (GPU0,))


async def test_the_claim_takes_over_what_the_bound_pod_held(store: ClusterStore) -> None:
    """The Binding may reach the log before the claim's allocation: the pod holds its
    devices until then, the claim from then on, after the pod is gone too."""
    await cluster(store, "a", "b")
    await assume_one(store, wants(res("a", "n1"), (GPU0,)))
    await store.begin_bind([claim("a", "n1")], NOW)
    await store.apply([pod_entry(3, "a", "n1")])
    assert await store.devices() == {GPU0: "pod:uid-a"}
    await store.apply([claim_entry(4, "a-gpu", (GPU0,))])
    assert await store.devices() == {GPU0: "claim:default/a-gpu"}
    await store.apply([pod_entry(5, "a", "n1", deleted=True)])
    assert (await assume_one(store, wants(res("b", "n2"), (GPU0,)))).reason == (
        f"device {GPU0} is already allocated"
    )
    await store.apply([claim_entry(6, "a-gpu")])  # deallocated
    assert await store.devices() == {}
    assert (await assume_one(store, wants(res("b", "n2"), (GPU0,)))).status == "assumed"


async def test_deleting_a_pod_releases_what_it_holds(store: ClusterStore) -> None:
    await cluster(store, "a", "b")
    await assume_one(store, wants(res("a", "n1"), (GPU0,)))
    await store.begin_bind([claim("a", "n1")], NOW)
    await store.apply([pod_entry(3, "a", "n1"), pod_entry(4, "a", "n1", deleted=True)])
    assert await store.devices() == {}


async def test_a_claim_holds_what_its_allocation_lists_now(store: ClusterStore) -> None:
    await cluster(store, "b")
    await store.apply([claim_entry(3, "c", (GPU0, GPU1)), claim_entry(4, "c", (GPU1, GPU2))])
    assert await store.devices() == {GPU1: "claim:default/c", GPU2: "claim:default/c"}
    assert (await assume_one(store, wants(res("b", "n1"), (GPU0,)))).status == "assumed"
    await store.apply([claim_entry(5, "c", deleted=True)])
    assert await store.devices() == {GPU0: "pod:uid-b"}


async def test_a_claim_taking_a_device_from_a_pod_leaves_it_when_the_pod_goes(
    store: ClusterStore,
) -> None:
    """A pod's later release does not touch what the claim took from it."""
    await cluster(store, "a")
    await assume_one(store, wants(res("a", "n1"), (GPU0, GPU1)))
    await store.apply([claim_entry(3, "c", (GPU0,))])
    await store.forget([claim("a", "n1")])
    assert await store.devices() == {GPU0: "claim:default/c"}


async def test_a_rebuild_restores_the_claims_holds(clients: Clients) -> None:
    log = [
        node_entry(1, "n1", cpu=1000, pods=10),
        claim_entry(2, "c", (GPU0, GPU1)),
        claim_entry(3, "d", (GPU2,)),
        claim_entry(4, "c", (GPU1,)),
    ]
    informer = clients.open()
    await informer.apply(log)
    await informer.set_leases({"uid-a": 1})
    await assume_one(informer, wants(res("a", "n1"), (GPU0,)))
    await clients.lose()
    await informer.restore(log, final=True)
    assert await informer.devices() == {GPU1: "claim:default/c", GPU2: "claim:default/d"}


async def test_devices_are_empty_on_a_blank_store(store: ClusterStore) -> None:
    assert await store.epoch() == Epoch("blank")
    assert await store.devices() == {}


@pytest.mark.parametrize("rounds", [5])
async def test_two_replicas_racing_for_the_last_device_one_wins(
    clients: Clients, rounds: int
) -> None:
    """Each round, two clients (two scheduler replicas) assume a different pod onto a
    different node with the same device at once: exactly one is assumed."""
    first, second = clients.open(), clients.open()
    await cluster(first, *(f"{side}{i}" for i in range(rounds) for side in "pq"))
    for i in range(rounds):
        device = f"gpu.example.com/pool-a/gpu-{i}"
        answers = await asyncio.gather(
            assume_one(first, wants(res(f"p{i}", "n1"), (device,))),
            assume_one(second, wants(res(f"q{i}", "n2"), (device,))),
        )
        assert sorted(a.status for a in answers) == ["assumed", "conflict"]
        [lost] = [a for a in answers if a.status == "conflict"]
        assert lost.devices == (device,)
        won = [f"pod:uid-{side}{i}" for side, a in zip("pq", answers, strict=True)]
        [winner] = [who for who, a in zip(won, answers, strict=True) if a.status == "assumed"]
        assert (await first.devices())[device] == winner
