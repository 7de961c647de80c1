"""The scheduling queue, without I/O: activeQ, backoffQ, unschedulablePods, gated pods and
the attempts in flight. Time comes from an injected clock.

::

                 add (pending, no gates)                pop (dispatch)
    ─────────────────────────────────▶ activeQ ─────────────────────────▶ in flight
          gated ──gates removed──▶        ▲  ▲                               │
                                          │  └── backoff expired ── backoffQ ◀┤ error, or failed
                                          │                                   │ after a move event
          unschedulablePods ──move event / 5-minute leftover flush──▶ ─┘       │
                 ▲                                                             │
                 └──────────────────────── unschedulable ─────────────────────┘

A pod has at most one attempt in flight. A cluster event that could help arriving while
the pod is in flight is remembered: if the attempt then fails, the pod goes to backoffQ
instead of being parked (the modern form of upstream's receivedMoveRequest).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from contracts.k8s import Pod

INITIAL_BACKOFF = 1.0
"""podInitialBackoffSeconds: the first retry waits this long (seconds)."""
MAX_BACKOFF = 10.0
"""podMaxBackoffSeconds: the backoff doubles per attempt up to this (seconds)."""
UNSCHEDULABLE_TIMEOUT = 300.0
"""A parked pod is retried after this long even if no event moved it (seconds)."""


class Where(Enum):
    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    GATED = "gated"
    IN_FLIGHT = "inflight"


@dataclass(slots=True)
class QueuedPodInfo:
    pod: Pod
    priority: int
    timestamp: float
    """When the pod was last added to the queue; PrioritySort's tie-breaker."""
    order: int
    """Arrival order (the log seq that added it), the tie-breaker below the timestamp."""
    attempts: int = 0
    where: Where = Where.ACTIVE
    unschedulable_plugins: frozenset[str] = frozenset()
    parked_at: float = 0.0
    backoff_until: float = 0.0
    moved_while_in_flight: bool = False
    token: int = 0
    last_message: str = field(default="")

    @property
    def uid(self) -> str:
        return self.pod.metadata.uid

    def sort_key(self) -> tuple[int, float, int]:
        """PrioritySort: higher priority first, then the earlier timestamp."""
        return (-self.priority, self.timestamp, self.order)


class SchedulingQueue:
    def __init__(
        self,
        *,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        unschedulable_timeout: float = UNSCHEDULABLE_TIMEOUT,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        self._pods: dict[str, QueuedPodInfo] = {}
        self._active: list[tuple[tuple[int, float, int], int, str]] = []
        self._tokens = itertools.count(1)

    # -- membership -------------------------------------------------------------------

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self._pods.get(uid)

    def pods(self) -> Iterable[QueuedPodInfo]:
        return self._pods.values()

    def counts(self) -> dict[str, int]:
        counts = {where.value: 0 for where in Where}
        for info in self._pods.values():
            counts[info.where.value] += 1
        return counts

    def add(self, pod: Pod, priority: int, now: float, order: int, attempts: int = 0) -> None:
        """A new pending pod (or one reloaded after a restart with its attempts so far)."""
        info = QueuedPodInfo(pod, priority, now, order, attempts=attempts)
        self._pods[info.uid] = info
        self._place(info, Where.GATED if pod.spec.scheduling_gates else Where.ACTIVE)

    def update(self, pod: Pod, priority: int, now: float) -> None:
        """A pending pod changed. In activeQ/backoffQ it is updated in place; a gated pod
        whose gates are gone, or a parked pod whose spec changed, becomes active."""
        info = self._pods[pod.metadata.uid]
        spec_changed = pod.spec != info.pod.spec or pod.metadata.labels != info.pod.metadata.labels
        info.pod = pod
        reordered = info.priority != priority
        info.priority = priority
        if info.where is Where.GATED and not pod.spec.scheduling_gates:
            info.timestamp = now
            self._place(info, Where.ACTIVE)
        elif info.where is Where.UNSCHEDULABLE and spec_changed:
            self._place(info, Where.BACKOFF if self._backing_off(info, now) else Where.ACTIVE)
        elif info.where is Where.ACTIVE and reordered:
            self._place(info, Where.ACTIVE)
        elif info.where is Where.IN_FLIGHT and spec_changed:
            info.moved_while_in_flight = True

    def delete(self, uid: str) -> QueuedPodInfo | None:
        """The pod is gone or assigned: it leaves every sub-queue (a stale heap entry is
        skipped lazily)."""
        return self._pods.pop(uid, None)

    # -- dispatch ---------------------------------------------------------------------

    def pop(self, limit: int) -> list[QueuedPodInfo]:
        """Up to ``limit`` pods from the head of activeQ; they are now in flight."""
        popped: list[QueuedPodInfo] = []
        while self._active and len(popped) < limit:
            _, token, uid = heapq.heappop(self._active)
            info = self._pods.get(uid)
            if info is None or info.token != token or info.where is not Where.ACTIVE:
                continue
            info.where = Where.IN_FLIGHT
            info.attempts += 1
            info.moved_while_in_flight = False
            popped.append(info)
        return popped

    # -- outcomes ---------------------------------------------------------------------

    def failed(
        self, uid: str, now: float, plugins: Iterable[str], *, error: bool, message: str = ""
    ) -> None:
        """The attempt in flight ended without a binding."""
        info = self._pods.get(uid)
        if info is None or info.where is not Where.IN_FLIGHT:
            return
        info.timestamp = now
        info.last_message = message
        info.unschedulable_plugins = frozenset(plugins)
        info.backoff_until = now + self.backoff_duration(info.attempts)
        if error or info.moved_while_in_flight:
            self._place(info, Where.BACKOFF)
        else:
            info.parked_at = now
            self._place(info, Where.UNSCHEDULABLE)

    def retry_now(self, uid: str) -> None:
        """The attempt was lost (superseded or never ran): back to activeQ, same count."""
        info = self._pods.get(uid)
        if info is not None and info.where is Where.IN_FLIGHT:
            info.attempts = max(0, info.attempts - 1)
            self._place(info, Where.ACTIVE)

    def backoff_duration(self, attempts: int) -> float:
        duration = self.initial_backoff
        for _ in range(1, attempts):
            duration *= 2
            if duration >= self.max_backoff:
                return self.max_backoff
        return min(duration, self.max_backoff)

    # -- moves ------------------------------------------------------------------------

    def move_all(self, now: float, helps: set[str] | None = None) -> int:
        """A cluster event that could make pods schedulable: move parked pods rejected by
        one of ``helps`` (all parked pods when None) to backoffQ or activeQ, and remember
        it for pods in flight. Returns how many parked pods moved."""
        moved = 0
        for info in self._pods.values():
            if (
                helps is not None
                and info.unschedulable_plugins
                and not (info.unschedulable_plugins & helps)
            ):
                continue
            if info.where is Where.UNSCHEDULABLE:
                self._place(info, Where.BACKOFF if self._backing_off(info, now) else Where.ACTIVE)
                moved += 1
            elif info.where is Where.IN_FLIGHT:
                info.moved_while_in_flight = True
        return moved

    def flush_backoff(self, now: float) -> int:
        """Pods whose backoff has expired go to activeQ (upstream: every second)."""
        ready = [
            i for i in self._pods.values() if i.where is Where.BACKOFF and i.backoff_until <= now
        ]
        for info in ready:
            self._place(info, Where.ACTIVE)
        return len(ready)

    def flush_leftover(self, now: float) -> int:
        """Pods parked longer than the unschedulable timeout are retried (every 30 s)."""
        stale = [
            i
            for i in self._pods.values()
            if i.where is Where.UNSCHEDULABLE and now - i.parked_at > self.unschedulable_timeout
        ]
        for info in stale:
            self._place(info, Where.BACKOFF if self._backing_off(info, now) else Where.ACTIVE)
        return len(stale)

    def next_backoff_expiry(self) -> float | None:
        expiries = [i.backoff_until for i in self._pods.values() if i.where is Where.BACKOFF]
        return min(expiries) if expiries else None

    def _backing_off(self, info: QueuedPodInfo, now: float) -> bool:
        return info.backoff_until > now

    def _place(self, info: QueuedPodInfo, where: Where) -> None:
        info.where = where
        info.token = next(self._tokens)
        if where is Where.ACTIVE:
            heapq.heappush(self._active, (info.sort_key(), info.token, info.uid))
