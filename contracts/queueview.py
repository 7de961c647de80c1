"""What the queue service shows of itself: ``ksched queue`` reads it from the store.

The queue writes a fresh view at most once a second (and when it stops); readers never
talk to the queue process, so any number of them cost it nothing.
"""

from __future__ import annotations

from contracts.k8s import Wire


class QueuedPod(Wire, kw_only=True, frozen=True):
    pod: str
    """``namespace/name``."""
    uid: str
    priority: int
    attempts: int
    since: float
    """Wall-clock seconds when the pod entered its current sub-queue."""
    backoff_until: float | None = None
    """When its backoff expires (backoffQ, and parked pods still backing off)."""
    plugins: list[str] = []
    """The plugins that rejected its last attempt (unschedulable and backoffQ pods); for
    a gated pod, the PreEnqueue plugin that holds it back."""
    gates: list[str] = []
    """Its scheduling gates (gated pods)."""
    message: str = ""
    """Why a gated pod is held back: its PreEnqueue plugin's message, what its
    ``NotReadyForScheduling`` condition says (or is about to, KEP-5501)."""


class QueueView(Wire, kw_only=True, frozen=True, tag_field="kind", tag="QueueView"):
    at: float
    """When the view was taken (wall-clock seconds)."""
    counts: dict[str, int]
    """Pods per sub-queue: ``active``, ``backoff``, ``unschedulable``, ``gated``, ``inflight``."""
    heads: dict[str, list[QueuedPod]] = {}
    """The first pods of each sub-queue, in the order they would leave it."""
    applied_seq: int = 0
    """The last log entry the queue had applied."""
