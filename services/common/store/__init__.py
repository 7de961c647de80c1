"""The store edge: ClusterStore with in-memory and Redis implementations."""

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

__all__ = [
    "PODS",
    "AssumeResult",
    "AssumeStatus",
    "Assumed",
    "BindClaim",
    "ClusterStore",
    "Nomination",
    "PodCharge",
    "ProjectedEntry",
    "Reservation",
]
