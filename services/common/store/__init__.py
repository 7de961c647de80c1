"""The store edge: ClusterStore with in-memory and Redis implementations.

``open_store(url)`` picks the implementation: ``memory://``, ``redis://`` / ``rediss://``,
or Redis behind Sentinel, ``redis+sentinel://`` / ``rediss+sentinel://``
(:mod:`services.common.store.sentinel`).
redis is imported only when a Redis store is opened, so services that run embedded never
load it. Here: the shared state's atomic steps (projection, leases, reservations and their
claims, nominations, preemptions, waiting pods, evictions, leader leases and fencing),
each written once for both backends' contract (tests/contract/test_store.py).

Not here: what a step means for scheduling (the scheduler's domains and batches, the
queue's leases, the binder's claims live in their services), the waiting-pods map the
framework's plugins see (services.framework.runtime.waiting_pods, over this store), and
resource arithmetic (services.common.resources, which the steps charge by).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.common.redact import redact
from services.common.store.base import (
    PODS,
    VOIDED,
    Assumed,
    AssumeResult,
    AssumeStatus,
    BindClaim,
    ClusterStore,
    Epoch,
    Nomination,
    NominationClaim,
    PodCharge,
    Preemption,
    ProjectedEntry,
    Reservation,
    StoreLost,
    WaitingRecord,
    WaitState,
)
from services.common.store.leases import Deposed, Fence, FencedError, LeaderLease, first_token
from services.common.store.memory import MemoryStore
from services.common.store.sentinel import NO_FAILOVER_OPTIONS, FailoverOptions, is_sentinel_url
from services.common.tls import NO_TLS_FILES, TLSFiles

if TYPE_CHECKING:
    from services.common.settings import Settings


def open_store(
    url: str,
    *,
    namespace: str = "ksched",
    tls: TLSFiles = NO_TLS_FILES,
    failover: FailoverOptions = NO_FAILOVER_OPTIONS,
) -> ClusterStore:
    """A store for ``url``: ``memory://`` (private to this process) or a Redis URL.

    ``namespace`` prefixes every Redis key, so several clusters (or tests) can share one
    Redis. ``tls`` (CA, client certificate and key) is used by ``rediss://`` and
    ``rediss+sentinel://``; ``failover`` by Sentinel URLs (and its replica wait by any
    Redis URL that sets it). Raises ValueError for any other scheme, or a Sentinel URL
    that does not parse.
    """
    if url.startswith("memory://"):
        return MemoryStore(namespace)
    if url.startswith(("redis://", "rediss://")) or is_sentinel_url(url):
        from services.common.store.redis import RedisStore

        return RedisStore(url, namespace=namespace, tls=tls, failover=failover)
    raise ValueError(
        f"unsupported store URL {redact(url)!r}: expected memory://, redis://, rediss://, "
        "redis+sentinel:// or rediss+sentinel://"
    )


def open_settings_store(settings: Settings) -> ClusterStore:
    """The store ``settings`` name: their Redis URL, key namespace, TLS files and
    failover options (what every service and command that reads the store opens)."""
    return open_store(
        settings.redis_url,
        namespace=settings.store_namespace,
        tls=settings.tls,
        failover=settings.failover,
    )


async def server_info(
    url: str,
    *,
    tls: TLSFiles = NO_TLS_FILES,
    failover: FailoverOptions = NO_FAILOVER_OPTIONS,
) -> dict[str, object]:
    """Redis's ``INFO server`` for the Redis ``url`` (its master under Sentinel), on a
    connection of its own: what a tool outside the store asks of the server itself (the
    bench finds Redis's process by its ``process_id``)."""
    from services.common.store._client import connect

    client = connect(url, tls, failover)
    try:
        info: dict[str, object] = await client.redis.info("server")
        return info
    finally:
        await client.aclose()


__all__ = [
    "PODS",
    "VOIDED",
    "AssumeResult",
    "AssumeStatus",
    "Assumed",
    "BindClaim",
    "ClusterStore",
    "Deposed",
    "Epoch",
    "FailoverOptions",
    "Fence",
    "FencedError",
    "LeaderLease",
    "MemoryStore",
    "Nomination",
    "NominationClaim",
    "PodCharge",
    "Preemption",
    "ProjectedEntry",
    "Reservation",
    "StoreLost",
    "WaitState",
    "WaitingRecord",
    "first_token",
    "open_settings_store",
    "open_store",
    "server_info",
]
