"""Attempts in flight and the cluster events that arrived meanwhile (upstream's
``inFlightPods`` / ``inFlightEvents`` in ``active_queue.go``).

Every event some plugin cares about is appended to one log while any pod is in flight;
each in-flight pod remembers where the log stood when it was popped. When its attempt
fails, the events after that mark decide whether it is parked or requeued — the modern
form of 1.10's ``receivedMoveRequest``. Events older than every in-flight pod are
dropped.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from services.framework.api.events import ClusterEvent
from services.queue.cluster_events import label


@dataclass(frozen=True, slots=True)
class InFlightEvent:
    event: ClusterEvent
    old: object | None
    new: object | None


class InFlight:
    def __init__(self) -> None:
        self._events: deque[InFlightEvent] = deque()
        self._base = 0
        """Position (since start) of ``_events[0]``."""
        self._pods: dict[str, int] = {}
        """uid → position of the first event after the pod was popped."""
        self._marks: list[tuple[int, str]] = []

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def uids(self) -> list[str]:
        """The pods in flight, in the order they were popped."""
        return list(self._pods)

    @property
    def pending_events(self) -> int:
        return len(self._events)

    def add(self, uid: str) -> None:
        mark = self._base + len(self._events)
        self._pods[uid] = mark
        heapq.heappush(self._marks, (mark, uid))

    def add_event_if_any(self, event: ClusterEvent, old: object | None, new: object | None) -> bool:
        """``addEventIfAnyInFlight``."""
        if not self._pods:
            return False
        self._events.append(InFlightEvent(event, old, new))
        return True

    def add_events_if_pod(
        self, uid: str, events: Iterable[ClusterEvent], old: object | None, new: object | None
    ) -> bool:
        """``addEventsIfPodInFlight``: the pod's own update while it is in flight."""
        if uid not in self._pods:
            return False
        self._events.extend(InFlightEvent(e, old, new) for e in events)
        return True

    def events_by_label(self) -> dict[str, int]:
        """``scheduler_inflight_events``: the events kept for in-flight pods' hints, by
        label, and ``PodPopped``: the pods in flight (upstream's pseudo-event)."""
        for _ in range(3):  # a scrape runs in another thread: retry a mutated deque
            try:
                events = list(self._events)
                break
            except RuntimeError:
                continue
        else:
            events = []
        out: dict[str, int] = {"PodPopped": len(self._pods)}
        for seen in events:
            name = label(seen.event)
            out[name] = out.get(name, 0) + 1
        return out

    def events_for(self, uid: str) -> list[InFlightEvent] | None:
        """``clusterEventsForPod``: what arrived since the pod was popped; None if it
        is not in flight."""
        mark = self._pods.get(uid)
        if mark is None:
            return None
        return list(itertools.islice(self._events, mark - self._base, None))

    def done(self, uid: str) -> None:
        """The attempt ended; drop the events no in-flight pod needs any more."""
        if self._pods.pop(uid, None) is None:
            return
        marks = self._marks
        while marks and self._pods.get(marks[0][1]) != marks[0][0]:
            heapq.heappop(marks)
        keep_from = marks[0][0] if marks else self._base + len(self._events)
        while self._base < keep_from:
            self._events.popleft()
            self._base += 1
