"""What the ClusterStore contract tests share: a store's clients on either backend
(:class:`Clients`), and builders of projected entries, reservations and claims."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import uuid4

import msgspec

from services.common.store import (
    AssumeResult,
    BindClaim,
    ClusterStore,
    MemoryStore,
    PodCharge,
    ProjectedEntry,
    Reservation,
    open_store,
)
from tests.builders import make_node, make_pod

REDIS_URL = "redis://127.0.0.1:6379/0"
NOW = 1_700_000_000.0
TTL = 30.0


class Clients:
    """Opens clients on one store: the same MemoryStore, or RedisStores on one namespace."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.namespace = f"t{uuid4().hex[:8]}"
        self.opened: list[ClusterStore] = []
        self._memory = MemoryStore(self.namespace)

    def open(self) -> ClusterStore:
        if self.backend == "memory":
            return self._memory.client()
        store = open_store(REDIS_URL, namespace=self.namespace)
        self.opened.append(store)
        return store

    async def lose(self) -> None:
        """Empty the store as FLUSHDB would (only this test's namespace on Redis)."""
        if self.backend == "memory":
            self._memory.flush()
            return
        from services.common.store.redis import RedisStore

        loser = open_store(REDIS_URL, namespace=self.namespace)
        assert isinstance(loser, RedisStore)
        await loser.flush_namespace()
        await loser.close()

    async def teardown(self) -> None:
        from services.common.store.redis import RedisStore

        for store in self.opened:
            assert isinstance(store, RedisStore)
            await store.flush_namespace()
            await store.close()


def node_entry(seq: int, name: str, **allocatable: int) -> ProjectedEntry:
    """The informer's entry for node ``name`` with ``allocatable`` (canonical units)."""
    body = msgspec.json.encode(make_node(name, allocatable=allocatable))
    return ProjectedEntry(seq=seq, kind="node", key=name, body=body, allocatable=allocatable)


def node_deleted(seq: int, name: str) -> ProjectedEntry:
    return ProjectedEntry(seq=seq, kind="node", key=name, body=None)


def pod_entry(
    seq: int, name: str, on: str | None, *, deleted: bool = False, **req: int
) -> ProjectedEntry:
    """The informer's entry for pod ``default/name`` (uid ``uid-<name>``) bound to
    ``on``, charging ``req`` and one pod; ``deleted``: its deletion."""
    pod = make_pod(name, uid=f"uid-{name}", node_name=on)
    body = None if deleted else msgspec.json.encode(pod)
    charge = PodCharge(uid=f"uid-{name}", node=None if deleted else on, requests={**req, "pods": 1})
    return ProjectedEntry(seq=seq, kind="pod", key=f"default/{name}", body=body, pod=charge)


def claim_entry(
    seq: int, name: str, devices: tuple[str, ...] = (), *, deleted: bool = False
) -> ProjectedEntry:
    """The informer's entry for ResourceClaim ``default/name`` whose allocation holds
    ``devices`` (none: not allocated); ``deleted``: its deletion."""
    body = None if deleted else msgspec.json.encode({"metadata": {"name": name}})
    held = () if deleted else devices
    return ProjectedEntry(seq, "resourceclaim", f"default/{name}", body, devices=held)


def res(
    name: str,
    on: str,
    attempt: int = 1,
    ttl: float = TTL,
    checked: frozenset[str] | None = None,
    **req: int,
) -> Reservation:
    requests = {**req, "pods": 1}
    return Reservation(
        uid=f"uid-{name}", node=on, attempt=attempt, requests=requests, ttl=ttl, checked=checked
    )


def claim(name: str, on: str, attempt: int = 1) -> BindClaim:
    return BindClaim(uid=f"uid-{name}", node=on, attempt=attempt)


async def snapshot(store: ClusterStore) -> tuple[Any, ...]:
    return (
        await store.applied_seq(),
        await store.objects("node"),
        await store.objects("pod"),
        await store.node_usage(),
        await store.allocatable(),
        await store.assumed(),
        await store.leases(),
        await store.nominations(),
        await store.devices(),
    )


async def assume_one(store: ClusterStore, r: Reservation, now: float = NOW) -> AssumeResult:
    [result] = await store.assume([r], now)
    return result


async def usage(store: ClusterStore, name: str) -> Mapping[str, int]:
    return (await store.node_usage([name]))[name]
