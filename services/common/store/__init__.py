"""The store edge: ClusterStore with in-memory and Redis implementations.

``open_store(url)`` picks the implementation: ``memory://`` or ``redis://`` / ``rediss://``.
redis is imported only when a Redis store is opened, so services that run embedded never
load it.
"""

from services.common.store.base import (
    PODS,
    Assumed,
    AssumeResult,
    AssumeStatus,
    BindClaim,
    ClusterStore,
    Nomination,
    PodCharge,
    ProjectedEntry,
    Reservation,
)
from services.common.store.memory import MemoryStore


def open_store(url: str, *, namespace: str = "ksched") -> ClusterStore:
    """A store for ``url``: ``memory://`` (private to this process) or a Redis URL.

    ``namespace`` prefixes every Redis key, so several clusters (or tests) can share one
    Redis. Raises ValueError for any other scheme.
    """
    if url.startswith("memory://"):
        return MemoryStore(namespace)
    if url.startswith(("redis://", "rediss://")):
        from services.common.store.redis import RedisStore

        return RedisStore(url, namespace=namespace)
    raise ValueError(f"unsupported store URL {url!r}: expected memory:// or redis://")


__all__ = [
    "PODS",
    "AssumeResult",
    "AssumeStatus",
    "Assumed",
    "BindClaim",
    "ClusterStore",
    "MemoryStore",
    "Nomination",
    "PodCharge",
    "ProjectedEntry",
    "Reservation",
    "open_store",
]
