"""Builders for the scheduling cycle outside a service: a snapshot loaded as the store
would hand it over, and a BatchScheduler over it (default profile unless given)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

import msgspec

from contracts.k8s import Node, Pod
from services.common.clock import FakeClock
from services.common.store import ClusterStore
from services.framework.cache.cache import Cache
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.scheduler.cycle import BatchScheduler
from services.scheduler.nominated import PendingPods


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
    snapshot: Cache,
    store: ClusterStore,
    pending: Sequence[Pod],
    *,
    framework: Framework | None = None,
    retries: int = 2,
    catch_up: Callable[[int], Awaitable[bool]] | None = None,
) -> tuple[BatchScheduler, PendingPods]:
    """A BatchScheduler of the ``default-scheduler`` profile (``framework``, else the
    default profile over ``snapshot``'s listers) with ``pending`` as its pending pods;
    ``catch_up`` as BatchScheduler takes it."""
    pods = PendingPods()
    pods.load(pending)
    framework = framework or Framework(
        default_profile(), in_tree_registry(), listers=snapshot.listers
    )
    scheduler = BatchScheduler(
        snapshot,
        {"default-scheduler": framework},
        store,
        FakeClock(),
        pending=pods,
        assume_ttl=30.0,
        max_conflict_retries=retries,
        catch_up=catch_up,
    )
    return scheduler, pods
