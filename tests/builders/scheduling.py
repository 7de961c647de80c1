"""Builders for the scheduling cycle outside a service: a snapshot loaded as the store
would hand it over, and a BatchScheduler over it (default profile unless given)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

import msgspec

from contracts.k8s import Node, Pod
from contracts.messages import ScheduleRequest
from services.common.clock import FakeClock
from services.common.resources import node_allocatable
from services.common.store import ClusterStore, ProjectedEntry
from services.common.store.memory import MemoryStore
from services.framework.api.registry import Registry
from services.framework.cache.cache import Cache
from services.framework.config import Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.scheduler.cycle import BatchScheduler
from services.scheduler.nominated import PendingPods
from services.scheduler.outcome import BatchOutcome


def loaded_cache(
    nodes: Sequence[Node], bound: Sequence[Pod] = (), others: Mapping[str, Sequence[object]] = {}
) -> Cache:
    """A snapshot holding ``nodes``, the ``bound`` pods and the listers' ``others``
    (kind → objects), loaded at seq 0."""
    cache = Cache()
    cache.load(
        {n.metadata.name: msgspec.json.encode(n) for n in nodes},
        {p.metadata.uid or "": msgspec.json.encode(p) for p in bound},
        0,
        {
            kind: {f"{i}": msgspec.json.encode(o) for i, o in enumerate(objs)}
            for kind, objs in others.items()
        },
    )
    return cache


def batch_scheduler(
    cache: Cache,
    store: ClusterStore,
    pending: Sequence[Pod],
    *,
    framework: Framework | None = None,
    retries: int = 2,
    catch_up: Callable[[int], Awaitable[bool]] | None = None,
    clock: FakeClock | None = None,
) -> tuple[BatchScheduler, PendingPods]:
    """A BatchScheduler of the ``default-scheduler`` profile (``framework``, else the
    default profile over ``cache``'s listers) with ``pending`` as its pending pods;
    ``catch_up`` as BatchScheduler takes it; ``clock`` (default: a FakeClock)."""
    pods = PendingPods()
    pods.load(pending)
    framework = framework or Framework(default_profile(), in_tree_registry(), listers=cache.listers)
    scheduler = BatchScheduler(
        cache,
        {"default-scheduler": framework},
        store,
        clock or FakeClock(),
        pending=pods,
        assume_ttl=30.0,
        max_conflict_retries=retries,
        catch_up=catch_up,
    )
    scheduler.versions.watch(pending)  # as the service's load does
    return scheduler, pods


def schedule_request(pod: Pod, attempt: int = 1, seq: int = 0) -> ScheduleRequest:
    """The queue's request to schedule ``pod`` (default profile)."""
    return ScheduleRequest(
        uid=pod.metadata.uid or "",
        namespace=pod.metadata.namespace or "default",
        name=pod.metadata.name,
        attempt=attempt,
        profile="default-scheduler",
        seq=seq,
    )


async def store_node(store: ClusterStore, n: Node) -> None:
    """Record ``n`` in the store's projection at the next seq (4 cpu, 32Gi, 110 pods)."""
    seq = await store.applied_seq() + 1
    allocatable = {"cpu": 4000, "memory": 32 << 30, "pods": 110}
    body = msgspec.json.encode(n)
    await store.apply([ProjectedEntry(seq, "node", n.metadata.name, body, None, allocatable)])


async def schedule_once(
    pods: Sequence[Pod],
    objects: Sequence[object],
    nodes: Sequence[Node],
    profile: Profile,
    registry: Registry | None = None,
) -> BatchOutcome:
    """One batch of ``pods`` through a BatchScheduler of ``profile`` (plugins from
    ``registry``, default the in-tree ones) over ``nodes`` and the listers' ``objects``,
    with the nodes in a fresh MemoryStore and every pod leased: the batch's outcomes."""
    snapshot = Cache()
    for node in nodes:
        snapshot.add_node(node)
    for obj in objects:
        snapshot.listers.put(obj)
    framework = Framework(profile, registry or in_tree_registry(), listers=snapshot.listers)
    store = MemoryStore()
    await store.apply(
        [
            ProjectedEntry(
                i, "node", n.metadata.name, msgspec.json.encode(n), allocatable=node_allocatable(n)
            )
            for i, n in enumerate(nodes, 1)
        ]
    )
    await store.set_leases({p.metadata.uid or "": 1 for p in pods})
    pending = PendingPods()
    pending.load(pods)
    cycle = BatchScheduler(
        snapshot,
        {profile.scheduler_name: framework},
        store,
        FakeClock(),
        pending=pending,
        assume_ttl=30,
        max_conflict_retries=3,
    )
    requests = [
        msgspec.structs.replace(schedule_request(p), profile=profile.scheduler_name) for p in pods
    ]
    return await cycle.run(requests)
