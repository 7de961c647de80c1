"""The scheduling queue without I/O: upstream's ``PriorityQueue``. Time comes from an
injected clock; the service feeds it cluster events and attempt results.

::

  add ─▶ PreEnqueue ─ok─▶ activeQ ───────── pop ─────────▶ in flight ──── bound ────▶ gone
             │ gate         ▲  ▲  ▲                            │
             ▼              │  │  └─ backoff over ─ backoffQ ◀─┤ an error; or an event seen
           gated ─ gates ───┘  │    (every second)     ▲       │ in flight may help and the
                   removed     │                       │       │ pod is still backing off
                               │  an event may help,   │       │
                               │  still backing off ───┘       │ no event seen in flight
                               │                       │       │ may help
                               │                       │       ▼
                               └── an event may help, ── unschedulablePods
                                   backoff over; or
                                   parked over 5 minutes

"May help" is the queueing hint of a plugin that rejected the pod, for an event that
plugin registered; a Queue from a Pending plugin skips backoff. With PopFromBackoffQ,
an empty activeQ lets the head of backoffQ be popped before its backoff is over.

- add / update / delete: a pending pod appeared, changed, left (bound elsewhere,
  deleted). An update of a pod in activeQ or backoffQ only repositions it; an update of a
  parked pod asks its rejecting plugins' hints about the update's events; an update of a
  pod in flight is remembered for when its attempt ends.
- pop: activeQ's head goes in flight (``attempts`` + 1).
- done: the attempt bound the pod; it leaves the queue.
- add_unschedulable_if_not_present: the attempt failed. Rejecting plugins (or none, for
  an error) are recorded, the backoff counts grow, and the events that arrived while it
  was in flight decide: parked (QueueSkip), backoffQ or activeQ.
- move_all_to_active_or_backoff_queue: a cluster event; parked pods whose rejecting
  plugins' hints say Queue move, and the event is remembered for the pods in flight.
- flush_backoff_q_completed (every second), flush_unschedulable_pods_leftover (every
  30 s, pods parked more than 5 minutes): the timers.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import Final

from contracts.k8s import Pod
from services.framework.api.events import ClusterEvent
from services.framework.api.interface import QueueSortPlugin
from services.queue.backoff_queue import BackoffQueue
from services.queue.cluster_events import (
    BACKOFF_COMPLETE,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    FORCE_ACTIVATE,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULED_POD_ADD,
    label,
    match_any,
    pod_scheduling_properties_change,
)
from services.queue.heap import Key, KeyedHeap
from services.queue.hints import QueueingHintMap, QueueingStrategy
from services.queue.in_flight import InFlight
from services.queue.pod_status import PreEnqueueStatus
from services.queue.pods import gang_of, native_group_of, pod_info
from services.queue.profiles import QueueProfile
from services.queue.types import Now, QueueEntry, SubQueue
from services.queue.unschedulable_pods import UnschedulablePods

INITIAL_BACKOFF: Final = 1.0
"""podInitialBackoffSeconds (upstream ``DefaultPodInitialBackoffDuration``)."""
MAX_BACKOFF: Final = 10.0
"""podMaxBackoffSeconds (upstream ``DefaultPodMaxBackoffDuration``)."""
MAX_IN_UNSCHEDULABLE: Final = 300.0
"""``DefaultPodMaxInUnschedulablePodsDuration``: seconds a parked pod waits for an event
before the leftover flush retries it anyway."""
LEFTOVER_FLUSH_PERIOD: Final = 30.0
"""Seconds between two leftover flushes (upstream runs it every 30 s)."""

_PARKED: Final = (SubQueue.UNSCHEDULABLE, SubQueue.GATED)
_OLDEST_FIRST: Final = attrgetter("timestamp", "order")
PreEnqueueCheck = Callable[[QueueEntry], bool]
"""Upstream's ``PreEnqueueCheck``: narrows the parked pods an event may move."""


class SchedulingQueue:
    def __init__(
        self,
        profiles: Sequence[QueueProfile],
        clock: Now,
        *,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE,
        pop_from_backoff: bool = True,
        pre_enqueue_pod_status: bool = True,
    ) -> None:
        """``profiles``: every profile the queue serves; they share the first one's
        QueueSort (the configuration checks they are the same). ``pop_from_backoff``,
        ``pre_enqueue_pod_status``: upstream's SchedulerPopFromBackoffQ (backoff_queue)
        and SchedulerPreEnqueuePodStatus (pod_status) features."""
        if not profiles:
            raise ValueError("the scheduling queue needs at least one profile")
        self.clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._profiles = {p.scheduler_name: p for p in profiles}
        self.listers = list({id(p.listers): p.listers for p in profiles}.values())
        """Every profile's listers (the queue applies the log to them)."""
        self._sort = profiles[0].queue_sort
        self.hints = QueueingHintMap({p.scheduler_name: p.events for p in profiles})
        self.scheduled_after_flush = 0
        """Pods bound after the leftover flush moved them out of unschedulablePods
        (``scheduler_pod_scheduled_after_flush_total``)."""
        self._active: KeyedHeap[QueueEntry] = KeyedHeap(self._active_key)
        self._backoff = BackoffQueue(
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            active_key=self._active_key,
            pop_from_backoff=pop_from_backoff,
        )
        self._unschedulable = UnschedulablePods()
        self._in_flight = InFlight()
        self.pod_status = PreEnqueueStatus(clock, enabled=pre_enqueue_pod_status)
        self._pods: dict[str, QueueEntry] = {}
        self.incoming: Counter[tuple[str, str]] = Counter()
        """(queue, event) → pods that entered that sub-queue because of that event:
        ``scheduler_queue_incoming_pods_total``."""
        self.version = 0
        """Bumped by every change; the service republishes its view when it moved."""

    @property
    def queue_sort(self) -> QueueSortPlugin:
        return self._sort

    def _active_key(self, info: QueueEntry) -> Key:
        return (*self._sort.sort_key(info), info.order)

    # -- reading ------------------------------------------------------------------------

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def get(self, uid: str) -> QueueEntry | None:
        return self._pods.get(uid)

    def pods(self) -> Iterator[QueueEntry]:
        return iter(list(self._pods.values()))

    @property
    def serves(self) -> frozenset[str]:
        return frozenset(self._profiles)

    def unschedulable_reasons(self) -> dict[tuple[str, str], int]:
        """``scheduler_unschedulable_pods`` (see UnschedulablePods.reasons)."""
        return self._unschedulable.reasons()

    def inflight_events(self) -> dict[str, int]:
        """``scheduler_inflight_events`` (see InFlight.events_by_label)."""
        return self._in_flight.events_by_label()

    def counts(self) -> dict[str, int]:
        """Pods per sub-queue, keyed by :class:`SubQueue` value."""
        gated = self._unschedulable.gated
        return {
            SubQueue.ACTIVE.value: len(self._active),
            SubQueue.BACKOFF.value: len(self._backoff),
            SubQueue.UNSCHEDULABLE.value: len(self._unschedulable) - gated,
            SubQueue.GATED.value: gated,
            SubQueue.IN_FLIGHT.value: len(self._in_flight),
        }

    def in_flight_attempt(self, uid: str) -> int | None:
        """The attempt number in flight for ``uid``, or None."""
        info = self._pods.get(uid)
        return info.attempts if info is not None and uid in self._in_flight else None

    def next_backoff_expiry(self) -> float | None:
        """The earliest clock time a pod in backoffQ completes its backoff."""
        return self._backoff.next_completion()

    def backoff_time(self, info: QueueEntry) -> float | None:
        """When the pod's current backoff ends (None: it owes none)."""
        return self._backoff.backoff_time(info)

    def is_backing_off(self, info: QueueEntry) -> bool:
        return self._backoff.is_backing_off(info, self.clock.now())

    def backoff_duration(self, count: int) -> float:
        return self._backoff.backoff_duration(count)

    def heads(self, n: int) -> dict[SubQueue, list[QueueEntry]]:
        """The first ``n`` pods of each sub-queue in the order they would leave it:
        activeQ by QueueSort, backoffQ by backoff end, parked and gated pods oldest
        first (the leftover flush order), in-flight pods by dispatch."""
        parked = [i for i in self._unschedulable if not i.gated]
        gated = [i for i in self._unschedulable if i.gated]
        return {
            SubQueue.ACTIVE: self._active.smallest(n),
            SubQueue.BACKOFF: self._backoff.smallest(n),
            SubQueue.UNSCHEDULABLE: heapq.nsmallest(n, parked, key=_OLDEST_FIRST),
            SubQueue.GATED: heapq.nsmallest(n, gated, key=_OLDEST_FIRST),
            SubQueue.IN_FLIGHT: [self._pods[uid] for uid in self._in_flight.uids()[:n]],
        }

    # -- pod lifecycle ----------------------------------------------------------------

    def add(self, pod: Pod, *, priority: int, order: int, attempts: int = 0) -> None:
        """``Add``: a new pending pod (or one reloaded after a restart, with the
        attempts it had). PreEnqueue decides between activeQ and the gated pods."""
        uid = pod.metadata.uid
        existing = self._pods.get(uid)
        if existing is not None:
            self.update(existing.pod, pod, priority=priority)
            return
        now = self.clock.now()
        info = QueueEntry(
            pod_info(pod, priority), now, attempts=attempts, uid=uid, order=order, since=now
        )
        self._pods[uid] = info
        self._move_to_active_q(info, label(UNSCHEDULED_POD_ADD))

    def update(self, old: Pod, new: Pod, *, priority: int) -> None:
        """``Update``: the pending pod changed from ``old`` (the version the queue had)
        to ``new``. Unknown pods are added."""
        uid = new.metadata.uid
        info = self._pods.get(uid)
        if info is None:
            self.add(new, priority=priority, order=0)
            return
        events = pod_scheduling_properties_change(new, old)
        info.pod_info = pod_info(new, priority, info.pod_info)
        self.version += 1
        if uid in self._in_flight:
            self._in_flight.add_events_if_pod(uid, events, old, new)
        elif uid in self._active:
            self._active.push(uid, info)
        elif uid in self._backoff:
            self._backoff.update(info)
        elif uid in self._unschedulable:
            for event in events:
                strategy = self._strategy(info, event, old, new)
                if self._requeue(info, strategy, label(event)) not in _PARKED:
                    break

    def set_priority(self, uid: str, priority: int) -> None:
        """The pod's PriorityClass changed: reposition it."""
        info = self._pods.get(uid)
        if info is None or info.priority == priority:
            return
        info.pod_info = replace(info.pod_info, priority=priority)
        self.version += 1
        if uid in self._active:
            self._active.push(uid, info)
        elif uid in self._backoff:
            self._backoff.update(info)

    def delete(self, uid: str) -> QueueEntry | None:
        """``Delete``: the pod is gone, assigned, or no longer ours; it leaves every
        sub-queue (an attempt still in flight is forgotten, its result ignored)."""
        info = self._pods.pop(uid, None)
        if info is not None:
            self._leave(info)
            self._in_flight.done(uid)
            self.pod_status.forget(uid)
            self.version += 1
        return info

    # -- attempts ---------------------------------------------------------------------

    def pop(self, limit: int, gangs_out: Collection[tuple[str, str]] = ()) -> list[QueueEntry]:
        """``Pop`` up to ``limit`` pods: activeQ's head first; with PopFromBackoffQ,
        backoffQ's head when activeQ is empty. They are in flight until :meth:`done`,
        :meth:`add_unschedulable_if_not_present` or :meth:`retry`.

        Gangs go out one batch at a time: ``gangs_out`` are the pod groups with members
        in flight whose attempts have not reported yet. While any is out, a gang member
        at the head stops the pop (the pods behind it wait for those results): two
        gangs are never scheduled at once on different replicas, each holding half the
        room the other needs, and the rest of a gang goes out only once its first
        members wait at Permit, where every replica counts them. Within one pop (one
        batch, one replica, scheduled in order) any number of gangs may go.

        Popped early from backoffQ (PopFromBackoffQ), a gang member goes alone, and
        nothing from backoffQ follows a gang member: a batch keeps the one-pod-at-a-time
        order of upstream's loop there, where the pods a gang gave room back to and the
        gang's own retries (Coscheduling activates the siblings of the first member to
        wait) take turns by backoff instead of the gang retaking the room first."""
        popped: list[QueueEntry] = []
        now = self.clock.now()
        out = frozenset(gangs_out)
        gangs = False
        while len(popped) < limit or self._continues_gang(popped):
            from_backoff = self._active.peek() is None
            head = self._backoff.peek_backoff() if from_backoff else self._active.peek()
            if head is None or (from_backoff and not self._backoff.pop_from_backoff):
                break
            group = gang_of(head.pod)
            if group is not None and out:
                break
            if from_backoff and popped and (gangs or group is not None):
                break  # a gang member early from backoffQ goes alone (see below)
            info = self._backoff.pop_backoff() if from_backoff else self._active.pop()
            assert info is head
            if from_backoff:
                self.incoming[(SubQueue.ACTIVE.value, POP_FROM_BACKOFF_Q)] += 1
            info.attempts += 1
            info.where, info.since = SubQueue.IN_FLIGHT, now
            self._in_flight.add(info.uid)
            popped.append(info)
            gangs = gangs or group is not None
            if from_backoff and group is not None:
                break
            if not from_backoff and group is not None and native_group_of(info.pod) == group:
                popped.extend(self._pop_siblings(group, now))
        if popped:
            self.version += 1
        return popped

    def _pop_siblings(self, group: tuple[str, str], now: float) -> list[QueueEntry]:
        """The other members of a native PodGroup in activeQ, in activeQ's order: they
        go out with the first (one batch, one replica), as upstream's pod group
        scheduling cycle takes a group's pods together; PrioritySort alone would
        interleave two gangs' members, each gang reserving half the room."""
        siblings = sorted(
            (i for i in self._active.items() if native_group_of(i.pod) == group),
            key=self._active_key,
        )
        for info in siblings:
            self._active.delete(info.uid)
            info.attempts += 1
            info.where, info.since = SubQueue.IN_FLIGHT, now
            self._in_flight.add(info.uid)
        return siblings

    def _continues_gang(self, popped: list[QueueEntry]) -> bool:
        """Whether activeQ's head belongs to the same pod group as the last pod popped:
        a gang's members go out together (one batch, one scheduler replica), even past
        ``limit``."""
        if not popped:
            return False
        group = gang_of(popped[-1].pod)
        head = self._active.peek()
        return group is not None and head is not None and gang_of(head.pod) == group

    def done(self, uid: str) -> None:
        """The attempt ended with the pod bound: it leaves the queue."""
        self.delete(uid)

    def retry(self, uid: str) -> None:
        """The attempt never reached a scheduler (dispatch failed): back to activeQ at
        its place. Its attempt number stays used, so a copy that did get out is stale."""
        info = self._pods.get(uid)
        if info is None or uid not in self._in_flight:
            return
        self._in_flight.done(uid)
        self._enter_active(info)

    def adopt(self, uid: str, attempt: int) -> bool:
        """A reloading queue finds attempt ``attempt`` of ``uid`` still running (waiting
        at Permit, or resolved and on its way to a binder): the pod is in flight with
        that attempt instead of being attempted again. False when the pod is not here
        or its attempt number (from its lease) is another."""
        info = self._pods.get(uid)
        if info is None or info.attempts != attempt:
            return False
        if uid not in self._in_flight:
            self._leave(info)
            info.where, info.since = SubQueue.IN_FLIGHT, self.clock.now()
            self._in_flight.add(uid)
            self.version += 1
        return True

    def add_unschedulable_if_not_present(
        self,
        uid: str,
        unschedulable_plugins: Iterable[str],
        pending_plugins: Iterable[str] = (),
        *,
        message: str = "",
    ) -> SubQueue | None:
        """``AddUnschedulableIfNotPresent``: the attempt in flight failed, rejected by
        ``unschedulable_plugins`` / ``pending_plugins``, or by none for an error.
        Returns where the pod went; None if it was not in flight (stale result)."""
        info = self._pods.get(uid)
        if info is None or uid not in self._in_flight:
            return None
        info.unschedulable_plugins = set(unschedulable_plugins)
        info.pending_plugins = set(pending_plugins)
        if info.rejector_plugins:
            info.unschedulable_count += 1
            info.consecutive_errors_count = 0
        else:
            info.consecutive_errors_count += 1
        info.timestamp = self.clock.now()
        info.backoff_expiration = None
        info.was_flushed_from_unschedulable = False
        info.message = message
        strategy = self._strategy_for_in_flight(info)
        self._in_flight.done(uid)
        return self._requeue(info, strategy, SCHEDULE_ATTEMPT_FAILURE)

    def _strategy_for_in_flight(self, info: QueueEntry) -> QueueingStrategy:
        """``determineSchedulingHintForInFlightPod``: the most urgent strategy any event
        seen while the pod was in flight gives."""
        if not info.rejector_plugins:
            return QueueingStrategy.QueueAfterBackoff
        events = self._in_flight.events_for(info.uid)
        if events is None:
            return QueueingStrategy.QueueAfterBackoff
        strategy = QueueingStrategy.QueueSkip
        for seen in events:
            found = self._strategy(info, seen.event, seen.old, seen.new)
            if found is QueueingStrategy.QueueImmediately:
                return found
            if found is QueueingStrategy.QueueAfterBackoff:
                strategy = found
                if not info.pending_plugins:
                    return strategy
        return strategy

    # -- cluster events ---------------------------------------------------------------

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old: object | None,
        new: object | None,
        pre_check: PreEnqueueCheck | None = None,
    ) -> int:
        """``MoveAllToActiveOrBackoffQueue``: parked pods the event may help move to
        backoffQ or activeQ. Returns how many moved."""
        if not self.hints.is_event_of_interest(event):
            return 0
        if event.is_wildcard():
            candidates = list(self._unschedulable)
        else:
            candidates = self._unschedulable.rejected_by(self.hints.interested_plugins(event))
        if pre_check is not None:
            candidates = [c for c in candidates if pre_check(c)]
        return self._move_pods(candidates, event, old, new)

    def _move_pods(
        self,
        infos: Iterable[QueueEntry],
        event: ClusterEvent,
        old: object | None,
        new: object | None,
    ) -> int:
        """``movePodsToActiveOrBackoffQueue``."""
        if not self.hints.is_event_of_interest(event):
            return 0
        moved = 0
        event_label = label(event)
        for info in infos:
            if info.gated and not match_any(event, info.gating_plugin_events):
                continue
            strategy = self._strategy(info, event, old, new)
            if strategy is QueueingStrategy.QueueSkip:
                continue
            if self._requeue(info, strategy, event_label) not in _PARKED:
                moved += 1
        self._in_flight.add_event_if_any(event, old, new)
        return moved

    def activate(self, uids: Iterable[str]) -> int:
        """``Activate``: each pod in unschedulablePods or backoffQ moves to activeQ (a
        ``ForceActivate``); one in flight has the event remembered, so its attempt's
        failure requeues it. Others (in activeQ, unknown) are left. Returns how many
        moved."""
        moved = 0
        for uid in uids:
            info = self._pods.get(uid)
            if info is None:
                continue
            if info.where in (*_PARKED, SubQueue.BACKOFF):
                self._leave(info)
                if self._move_to_active_q(info, FORCE_ACTIVATE):
                    moved += 1
            else:
                self._in_flight.add_events_if_pod(uid, (EVENT_FORCE_ACTIVATE,), None, info.pod)
        return moved

    def flush_backoff_q_completed(self) -> int:
        """``flushBackoffQCompleted``: pods whose backoff is over go to activeQ."""
        moved = 0
        for info in self._backoff.pop_completed(self.clock.now()):
            if self._move_to_active_q(info, BACKOFF_COMPLETE, from_backoff=True):
                moved += 1
        return moved

    def flush_unschedulable_pods_leftover(self) -> int:
        """``flushUnschedulablePodsLeftover``: pods parked longer than
        ``max_in_unschedulable`` are moved as by a wildcard event (gated pods stay)."""
        now = self.clock.now()
        stale = [i for i in self._unschedulable if now - i.timestamp > self.max_in_unschedulable]
        for info in stale:
            info.was_flushed_from_unschedulable = True
        if not stale:
            return 0
        return self._move_pods(stale, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    # -- moving between sub-queues ----------------------------------------------------

    def _strategy(
        self, info: QueueEntry, event: ClusterEvent, old: object | None, new: object | None
    ) -> QueueingStrategy:
        if info.gated and info.gating_plugin and event is not EVENT_UNSCHEDULABLE_TIMEOUT:
            # A gated pod moves only when its gate may have opened: asking the other
            # plugins would run PreEnqueue again just to gate it again.
            gate = {info.gating_plugin}
            return self.hints.strategy(info.pod, gate, set(), event, old, new)
        return self.hints.strategy(
            info.pod, info.unschedulable_plugins, info.pending_plugins, event, old, new
        )

    def _requeue(self, info: QueueEntry, strategy: QueueingStrategy, event: str) -> SubQueue:
        """``requeuePodWithQueueingStrategy``; returns where the pod is now."""
        if strategy is QueueingStrategy.QueueSkip:
            return self._park(info, event)
        if strategy is QueueingStrategy.QueueAfterBackoff and self.is_backing_off(info):
            self._move_to_backoff_q(info, event)
        else:
            self._move_to_active_q(info, event)
        return info.where

    def _move_to_active_q(self, info: QueueEntry, event: str, from_backoff: bool = False) -> bool:
        """``moveToActiveQ``: PreEnqueue (skipped for pods straight from backoffQ, which
        ran it on the way in) and activeQ, or the gated pods."""
        if not (from_backoff and self._backoff.pop_from_backoff):
            self._run_pre_enqueue(info)
        uid = info.uid
        if info.gated:
            if uid not in self._active and uid not in self._backoff:
                self._park(info, event)
            return False
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self.clock.now()
        self._enter_active(info)
        self.incoming[(SubQueue.ACTIVE.value, event)] += 1
        return True

    def _move_to_backoff_q(self, info: QueueEntry, event: str) -> bool:
        """``moveToBackoffQ`` (with PopFromBackoffQ, PreEnqueue runs here)."""
        if self._backoff.pop_from_backoff:
            self._run_pre_enqueue(info)
            if info.gated:
                self._park(info, event)
                return False
        self._leave(info)
        self._backoff.add(info)
        self._entered(info, SubQueue.BACKOFF)
        self.incoming[(SubQueue.BACKOFF.value, event)] += 1
        return True

    def _park(self, info: QueueEntry, event: str) -> SubQueue:
        """``unschedulablePods.addOrUpdate``."""
        uid = info.uid
        if uid not in self._unschedulable:
            self._leave(info)
        if self._unschedulable.add_or_update(info):
            self.incoming[(SubQueue.UNSCHEDULABLE.value, event)] += 1
            self._entered(info, SubQueue.GATED if info.gated else SubQueue.UNSCHEDULABLE)
        else:
            info.where = SubQueue.GATED if info.gated else SubQueue.UNSCHEDULABLE
        return info.where

    def _enter_active(self, info: QueueEntry) -> None:
        self._leave(info)
        self._active.push(info.uid, info)
        self._entered(info, SubQueue.ACTIVE)

    def _entered(self, info: QueueEntry, where: SubQueue) -> None:
        info.where, info.since = where, self.clock.now()
        self.version += 1

    def _leave(self, info: QueueEntry) -> None:
        uid = info.uid
        if self._active.delete(uid) is None:
            self._backoff.delete(uid)
            self._unschedulable.delete(uid)

    def _run_pre_enqueue(self, info: QueueEntry) -> None:
        profile = self._profiles.get(info.profile)
        if profile is None:
            info.gating_plugin = ""
        else:
            profile.run_pre_enqueue_plugins(info, self.hints.plugin_events)
        self.pod_status.observe(info)
