"""Two scheduler replicas wanting one DRA device: the second one's reservation carries
the device its Reserve chose (``CycleState.reserved_devices``), the store refuses it
because the first one's pod holds it, and the replica counts that device as held
elsewhere for the assume TTL (``Cache.devices_held_elsewhere``): the pod is scheduled
again within its attempt and gets the other device."""

from __future__ import annotations

from services.common.clock import FakeClock
from services.common.store import MemoryStore
from services.framework.cache.cache import Cache
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.scheduler.cycle import BatchScheduler
from tests.builders import make_node
from tests.builders.scheduling import batch_scheduler, loaded_cache, schedule_request, store_node
from tests.unit.scheduler.device_support import (
    DRIVER,
    claiming_pod,
    device_framework,
    device_pod,
    dra_objects,
)

D0, D1 = "gpu.example.com/n1/gpu-0", "gpu.example.com/n1/gpu-1"
NODE = make_node("n1")
PODS = (device_pod("a"), device_pod("b"))
TTL = 30.0


async def replicas(
    store: MemoryStore, devices: tuple[str, ...], *, blind: bool = False
) -> tuple[list[BatchScheduler], FakeClock, Cache]:
    """Two replicas over ``store`` and one node with ``devices``; the second's cache."""
    clock = FakeClock()
    await store_node(store, NODE)
    await store.set_leases({f"uid-{p.metadata.name}": 1 for p in PODS})
    made = []
    for _ in range(2):
        cache = loaded_cache([NODE])
        framework = device_framework(cache, {"n1": devices}, now=clock.now(), blind=blind)
        scheduler, _ = batch_scheduler(cache, store, PODS, framework=framework, clock=clock)
        made.append(scheduler)
    return made, clock, cache


async def test_the_second_replica_is_refused_the_held_device_and_takes_the_other() -> None:
    store = MemoryStore()
    (first, second), clock, cache = await replicas(store, (D0, D1))
    won = await first.run([schedule_request(PODS[0])])
    raced = await second.run([schedule_request(PODS[1])])

    assert [b.name for b in won.binds + raced.binds] == ["a", "b"]
    assert raced.assume_conflicts == 1
    assert await store.devices() == {D0: "pod:uid-a", D1: "pod:uid-b"}
    assert cache.foreign_devices == {D0: clock.now() + TTL}
    assert cache.devices_held_elsewhere(clock.now() + TTL) == {D0}
    assert cache.devices_held_elsewhere(clock.now() + TTL + 1) == frozenset()
    assert cache.foreign_devices == {}


async def test_the_last_device_held_elsewhere_the_pod_fits_nowhere() -> None:
    store = MemoryStore()
    (first, second), _, _ = await replicas(store, (D0,))
    await first.run([schedule_request(PODS[0])])
    raced = await second.run([schedule_request(PODS[1])])
    [failure] = raced.failures
    assert (failure.result.outcome, raced.assume_conflicts) == ("unschedulable", 1)
    assert "cannot allocate all claims" in failure.result.message
    assert await store.devices() == {D0: "pod:uid-a"}


async def test_a_replica_blind_to_what_is_held_elsewhere_retries_in_vain() -> None:
    """The mutation: the plugin ignores the devices held elsewhere, so every retry
    picks the held device again until the retries run out (the store still never
    hands it out twice)."""
    store = MemoryStore()
    (first, second), _, _ = await replicas(store, (D0, D1), blind=True)
    await first.run([schedule_request(PODS[0])])
    raced = await second.run([schedule_request(PODS[1])])
    [failure] = raced.failures
    assert failure.result.outcome == "error"
    assert failure.result.message == (
        f'node "n1" no longer fits the pod: device {D0} is already allocated'
    )
    assert await store.devices() == {D0: "pod:uid-a"}


def default_framework(cache: Cache, clock: FakeClock) -> Framework:
    """The default profile on ``cache``'s listers, keeping the scheduler's time."""
    return Framework(default_profile(), in_tree_registry(), listers=cache.listers, now=clock.now)


async def test_with_dynamic_resources_the_retry_takes_the_free_device() -> None:
    """The same race with the in-tree DynamicResources on the default profile: the
    second replica's allocator, not knowing the first one's pod, chooses the device
    that pod holds; the store refuses it, and the retry allocates the other one."""
    pods = (claiming_pod("a", "a-gpu"), claiming_pod("b", "b-gpu"))
    objects = dra_objects("n1", 2, ["a-gpu", "b-gpu"])
    store = MemoryStore()
    await store_node(store, NODE)
    await store.set_leases({"uid-a": 1, "uid-b": 1})
    clock = FakeClock()
    caches = [loaded_cache([NODE], (), objects) for _ in range(2)]
    first, second = (
        batch_scheduler(c, store, pods, framework=default_framework(c, clock), clock=clock)[0]
        for c in caches
    )

    won = await first.run([schedule_request(pods[0])])
    raced = await second.run([schedule_request(pods[1])])

    assert [b.name for b in won.binds + raced.binds] == ["a", "b"]
    assert raced.assume_conflicts == 1
    held = await store.devices()
    assert sorted(held.values()) == ["pod:uid-a", "pod:uid-b"]
    assert sorted(held) == [f"{DRIVER}/n1/gpu-0", f"{DRIVER}/n1/gpu-1"]
    assert set(caches[1].foreign_devices) == {d for d, h in held.items() if h == "pod:uid-a"}


async def test_shares_of_one_device_are_not_held_in_the_store() -> None:
    """DRAConsumableCapacity: two replicas each give their pod a share of the one GPU
    (bandwidth 2, 1 each). The store guards exclusive devices only, so neither
    reservation holds the GPU and neither is refused; the capacity is the allocator's
    to count (the listed claims' ``consumedCapacity``)."""
    pods = (claiming_pod("a", "a-gpu"), claiming_pod("b", "b-gpu"))
    objects = dra_objects("n1", 1, ["a-gpu", "b-gpu"], shared=True)
    store = MemoryStore()
    await store_node(store, NODE)
    await store.set_leases({"uid-a": 1, "uid-b": 1})
    clock = FakeClock()
    caches = [loaded_cache([NODE], (), objects) for _ in range(2)]
    first, second = (
        batch_scheduler(c, store, pods, framework=default_framework(c, clock), clock=clock)[0]
        for c in caches
    )

    won = await first.run([schedule_request(pods[0])])
    shared = await second.run([schedule_request(pods[1])])

    assert [b.name for b in won.binds + shared.binds] == ["a", "b"]
    assert shared.assume_conflicts == 0
    assert await store.devices() == {}


async def test_one_replica_shares_a_device_until_its_capacity_is_used() -> None:
    """In one replica the allocations in flight count: two pods share the GPU's
    bandwidth of 2, the third finds none left."""
    pods = tuple(claiming_pod(n, f"{n}-gpu") for n in "abc")
    objects = dra_objects("n1", 1, [f"{n}-gpu" for n in "abc"], shared=True)
    store = MemoryStore()
    await store_node(store, NODE)
    await store.set_leases({f"uid-{n}": 1 for n in "abc"})
    clock = FakeClock()
    cache = loaded_cache([NODE], (), objects)
    scheduler, _ = batch_scheduler(
        cache, store, pods, framework=default_framework(cache, clock), clock=clock
    )

    done = await scheduler.run([schedule_request(p) for p in pods])

    assert sorted(b.name for b in done.binds) == ["a", "b"]
    [failure] = done.failures
    assert "cannot allocate all claims" in failure.result.message
    assert await store.devices() == {}
