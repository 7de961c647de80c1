"""backoffQ: pods that may be retried once their backoff is over (upstream's
``backoff_queue.go``).

Two heaps ordered by backoff expiry: ``podBackoffQ`` for pods some plugin rejected and
``podErrorBackoffQ`` for pods whose attempt failed with an error (no plugin to blame).
The two count separately: ``UnschedulableCount`` for rejections,
``ConsecutiveErrorsCount`` for errors in a row, so a burst of transient errors does not
inherit a long rejection history and vice versa. The backoff is
``podInitialBackoffSeconds * 2^(count-1)`` capped at ``podMaxBackoffSeconds``, counted
from the pod's timestamp (its last failure).

With ``pop_from_backoff`` (upstream's SchedulerPopFromBackoffQ, on by default) expiries
are aligned to one-second windows, pods of the same window leave in activeQ order, and
when activeQ is empty the head of ``podBackoffQ`` (never of ``podErrorBackoffQ``) may be
attempted before its backoff is over.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from services.queue.heap import Key, KeyedHeap
from services.queue.types import QueueEntry

ORDERING_WINDOW: Final = 1.0
"""``backoffQOrderingWindowDuration``: seconds per ordering window, also the flush period."""


class BackoffQueue:
    def __init__(
        self,
        *,
        initial_backoff: float,
        max_backoff: float,
        active_key: Callable[[QueueEntry], Key],
        pop_from_backoff: bool,
    ) -> None:
        """``active_key``: activeQ's order, the tie-breaker within a window."""
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.pop_from_backoff = pop_from_backoff
        expiry = self._expiry_key
        if pop_from_backoff:
            self._pods: KeyedHeap[QueueEntry] = KeyedHeap(lambda i: (expiry(i), *active_key(i)))
        else:
            self._pods = KeyedHeap(lambda i: (expiry(i), i.order))
        self._errors: KeyedHeap[QueueEntry] = KeyedHeap(lambda i: (expiry(i), i.order))

    def __len__(self) -> int:
        return len(self._pods) + len(self._errors)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods or uid in self._errors

    # -- backoff arithmetic ---------------------------------------------------------

    def backoff_duration(self, count: int) -> float:
        """``calculateBackoffDuration``: initial * 2^(count-1), capped; 0 for count 0."""
        if count <= 0:
            return 0.0
        duration = self.initial_backoff
        for _ in range(1, count):
            if duration > self.max_backoff - duration:
                return self.max_backoff
            duration += duration
        return min(duration, self.max_backoff)

    def backoff_time(self, info: QueueEntry) -> float | None:
        """``getBackoffTime``: when the pod's backoff ends (aligned to its window), or
        None when it owes none (never failed, or podMaxBackoffSeconds is 0)."""
        if self.max_backoff == 0:
            return None
        count = info.consecutive_errors_count or info.unschedulable_count
        if count == 0:
            return None
        if info.backoff_expiration is None:
            end = info.timestamp + self.backoff_duration(count)
            info.backoff_expiration = self._align(end)
        return info.backoff_expiration

    def is_backing_off(self, info: QueueEntry, now: float) -> bool:
        """``isPodBackingoff``: still inside its backoff, or inside the window the
        backoff ends in."""
        end = self.backoff_time(info)
        return end is not None and end >= self._align(now)

    def completes_at(self, info: QueueEntry) -> float:
        """The first clock time at which the pod is no longer backing off."""
        end = self.backoff_time(info)
        if end is None:
            return -math.inf
        return end + ORDERING_WINDOW if self.pop_from_backoff else math.nextafter(end, math.inf)

    def _align(self, t: float) -> float:
        return math.floor(t / ORDERING_WINDOW) * ORDERING_WINDOW if self.pop_from_backoff else t

    def _expiry_key(self, info: QueueEntry) -> float:
        end = self.backoff_time(info)
        return end if end is not None else -math.inf

    # -- the heaps ------------------------------------------------------------------

    def add(self, info: QueueEntry) -> None:
        """Into ``podErrorBackoffQ`` when no plugin rejected the pod, else
        ``podBackoffQ``; never into both."""
        if info.rejector_plugins:
            self._errors.delete(info.uid)
            self._pods.push(info.uid, info)
        else:
            self._pods.delete(info.uid)
            self._errors.push(info.uid, info)

    def update(self, info: QueueEntry) -> None:
        """Re-position a pod whose pod object (and so its activeQ key) changed."""
        heap = self._pods if info.uid in self._pods else self._errors
        heap.push(info.uid, info)

    def delete(self, uid: str) -> None:
        if self._pods.delete(uid) is None:
            self._errors.delete(uid)

    def pop_completed(self, now: float) -> list[QueueEntry]:
        """``popEachBackoffCompleted``: every pod whose backoff is over, both heaps."""
        done: list[QueueEntry] = []
        for heap in (self._pods, self._errors):
            while (head := heap.peek()) is not None and not self.is_backing_off(head, now):
                heap.pop()
                done.append(head)
        return done

    def peek_backoff(self) -> QueueEntry | None:
        """The pod :meth:`pop_backoff` would return, left in place."""
        return self._pods.peek()

    def pop_backoff(self) -> QueueEntry | None:
        """``popBackoff``: the head of ``podBackoffQ``, backoff over or not."""
        return self._pods.pop()

    def next_completion(self) -> float | None:
        heads = [h for h in (self._pods.peek(), self._errors.peek()) if h is not None]
        return min((self.completes_at(h) for h in heads), default=None)

    def smallest(self, n: int) -> list[QueueEntry]:
        """The first ``n`` pods in the order they complete their backoff."""
        merged = self._pods.smallest(n) + self._errors.smallest(n)
        merged.sort(key=lambda i: (self._expiry_key(i), i.order))
        return merged[:n]
