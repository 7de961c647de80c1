"""The queue service: keeps the :class:`SchedulingQueue` fed from ``ksched.cluster`` and
hands pods to the scheduler replicas on ``ksched.schedule``, at most ``max_in_flight``
at a time.

Bounded credit keeps the order under load: pods are popped from activeQ only when a
slot is free, so a high-priority pod published behind a large backlog is the next one
dispatched. Each dispatch records the attempt as the pod's lease in the store before it
is published; a result for any other attempt is ignored.

After a restart (or a gap in the cluster stream) the queue converges on the store:
pending pods, nodes, volumes, priority classes, leases and nominations. A pod that had
an attempt in flight is attempted again, once, with the next attempt number, and the
older attempt can no longer reserve.

One queue is active (it leads the ``queue`` leader lease; its store writes carry the
lease's fencing token). The preemptions in flight are in the store too
(services.queue.preemptions), for the queue that restarts or takes over.

A store that lost its projection (StoreLost from any store call, see
:mod:`services.common.store.base`) is waited out: once the informer has rebuilt it, the
queue writes back the leases of the attempts in flight, the nominations and the
preemptions it holds (they went with the store) and converges on the rebuilt store as
after a gap. A stale
attempt still cannot reserve: the store refuses any attempt that is not the lease.
The cluster feed is followed by a :class:`~services.common.projection.LogProjection`
(seq order, duplicates skipped, a gap or a StoreLost reloads from the store). A load
reads the store and converges on it with no cluster event or result applied in between
(they wait): the snapshot may be older than what they bring.

Every second (on the second) backoffQ is flushed, the PodScheduled conditions of pods
PreEnqueue held back for 5 s are published (KEP-5501, see pod_status) and the view is
republished if it changed; every 30 s pods parked for more than 5 minutes are retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any, Final, cast

import msgspec

from contracts import topology
from contracts.events import ClusterBatch, LogEntry, PodEntry
from contracts.k8s import (
    DEFAULT_SCHEDULER_NAME,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    SchedulingPodGroup,
)
from contracts.messages import AttemptResult, ResultBatch, ScheduleBatch, ScheduleRequest
from services.common import gctune
from services.common.bus import Bus, Consumer, Message, Received
from services.common.clock import Clock
from services.common.decisions import rfc3339
from services.common.metrics import MetricsEndpoint, close_endpoint, serve_metrics
from services.common.projection import LogProjection
from services.common.settings import QueueSettings
from services.common.store import ClusterStore, Epoch, StoreLost
from services.framework.api.implements import implements
from services.framework.api.interface import AttemptObserver
from services.framework.api.preemption import Preempting
from services.queue import preemptions
from services.queue.cluster_events import ASSIGNED_POD_DELETE
from services.queue.eventhandlers import VOLUME_KINDS, ClusterState, EventHandlers, Volume
from services.queue.metrics import QueueMetrics, event_label
from services.queue.native_podgroups import NativePodGroups
from services.queue.nominator import Nominator
from services.queue.pod_status import status_messages
from services.queue.podgroups import PodGroups, group_messages
from services.queue.pods import gang_of
from services.queue.profiles import QueueProfile
from services.queue.requests import schedule_request
from services.queue.scheduling_queue import LEFTOVER_FLUSH_PERIOD, SchedulingQueue
from services.queue.types import QueueEntry
from services.queue.view import queue_view

log = logging.getLogger("ksched.queue")

_encoder = msgspec.json.Encoder()
FLUSH_PERIOD: Final = 1.0
"""Seconds between backoffQ flushes (and view publications), aligned to the second."""
DISPATCH_RETRY: Final = 1.0
"""Seconds before a failed dispatch (or its failed recovery) is tried again."""
_LISTED_KINDS = ("podgroup", "schedulingpodgroup", "workload")
"""The kinds the queue's plugins read (Coscheduling's QueueSort, GangScheduling's
PreEnqueue)."""


class QueueService:
    def __init__(
        self,
        bus: Bus,
        store: ClusterStore,
        clock: Clock,
        *,
        profiles: Collection[str | QueueProfile] = (DEFAULT_SCHEDULER_NAME,),
        settings: QueueSettings | None = None,
        metrics_port: int | None = None,
        hold: bool = False,
        preempting: Preempting | None = None,
        on_dispatch: Callable[[], None] | None = None,
    ) -> None:
        """``profiles``: the profiles served, each a QueueProfile built from the
        profile's Framework, or a schedulerName standing for upstream's default plugins.
        ``settings``: this service's group (credit, batch size, backoff); None: the
        defaults. ``metrics_port``: serve ``/metrics`` there (0: any free port; None:
        no endpoint). ``hold``: accept events but dispatch nothing until :meth:`release`
        (the embedded simulator loads a whole cluster before the first attempt).
        ``preempting``: the running preemptions the profiles' DefaultPreemption gates
        pods with (the same object their Frameworks were given). ``on_dispatch``: called
        after each batch is dispatched (the embedded mode watches for a run that only
        repeats itself)."""
        settings = settings or QueueSettings()
        self._on_dispatch = on_dispatch
        self._bus = bus
        self._store = store
        self._clock = clock
        self.preempting = preempting if preempting is not None else Preempting()
        resolved = [
            p
            if isinstance(p, QueueProfile)
            else QueueProfile.default(p, now=clock.now, preempting=self.preempting)
            for p in profiles
        ]
        self._max_in_flight = settings.max_in_flight
        self._batch_size = settings.dispatch_batch
        self.queue = SchedulingQueue(
            resolved,
            clock,
            initial_backoff=settings.initial_backoff,
            max_backoff=settings.max_backoff,
            max_in_unschedulable=settings.max_in_unschedulable,
            pop_from_backoff=settings.pop_from_backoff,
            pre_enqueue_pod_status=settings.pre_enqueue_pod_status,
        )
        self.nominator = Nominator()
        self.handlers = EventHandlers(self.queue, self.nominator)
        self.queue_metrics = QueueMetrics(self.queue)
        self.registry = self.queue_metrics.registry
        """This service's Prometheus registry (``scheduler_pending_pods``…)."""
        self._metrics_port = metrics_port
        self.metrics: MetricsEndpoint | None = None
        self._origin: dict[str, tuple[float, dict[str, str]]] = {}
        self._wake = asyncio.Event()
        self._held = hold
        self._published: tuple[int, int] | None = None
        self._consumers: list[Consumer] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._projection = LogProjection(store, clock, log, load=self._load, apply=self._apply)
        """The cluster feed: cluster events wait in its buffer while a load runs."""
        self._ended: set[str] = set()
        """Pods whose attempt ended and whose lease the store may still hold."""
        self._converging = asyncio.Lock()
        """Held while attempt results are applied and while a load reads the store and
        converges on it: a pod bound between the read and the convergence would be
        taken for pending again by the older snapshot."""
        self.waiting: dict[str, int] = {}
        """Pods whose attempt (the value) waits at Permit: still in flight (their lease
        holds, events are tracked for them), but they use no dispatch credit, so any
        number of waiting pods never stalls the others."""
        self._gangs_out: dict[str, tuple[tuple[str, str], int]] = {}
        """Gang members dispatched whose attempt (uid → (group, attempt)) has not
        reported yet: gangs are dispatched one at a time (see SchedulingQueue.pop)."""
        self._groups = PodGroups()
        """PodGroups and their members, for the status the queue publishes."""
        self._native_groups = NativePodGroups(lambda: rfc3339(self._clock.now()))
        """Native PodGroups and their members, for their scheduling condition."""
        self.forgotten = 0
        """Assumptions forgotten in binding cycles so far (ScheduleBatch.forgotten)."""
        self.dispatched = 0
        """Attempts dispatched so far."""
        self._binding: set[str] = set()
        """Pods whose attempt ended ``bound`` and whose Binding the log has not shown yet:
        a resync must not take them for pending (after a store loss nothing else fences
        them: the binder's claim went with the store)."""

    @property
    def serves(self) -> frozenset[str]:
        """The schedulerNames whose pods this queue takes."""
        return self.queue.serves

    @property
    def applied_seq(self) -> int:
        return self._projection.applied_seq

    @property
    def in_flight(self) -> int:
        """Attempts in flight that use credit: those not waiting at Permit."""
        return self.queue.counts()["inflight"] - self._prune_waiting()

    def _unreported_gangs(self) -> set[tuple[str, str]]:
        """The pod groups with members in flight that have not reported yet (a member
        waiting at Permit has reported): the next gang goes out after they have."""
        if not self._gangs_out:
            return set()
        gone = [
            uid
            for uid, (_, attempt) in self._gangs_out.items()
            if self.queue.in_flight_attempt(uid) != attempt
        ]
        for uid in gone:
            del self._gangs_out[uid]
        return {group for group, _ in self._gangs_out.values()}

    def _nominate(self, result: AttemptResult) -> None:
        """Preemption's nomination for the pod (a node, or "" to clear it), and the
        lower-priority nominations it cleared on that node; flushed to the store with
        the results. A pod that preempted waits for its victims to go (see
        :class:`Preempting`)."""
        if result.victims:
            # A victim deleted before this result arrived (the client was quick) is gone.
            left = [uid for uid in result.victims if uid in self.handlers.assigned]
            self.preempting.start(result.uid, left, self._clock.now())
        if result.nominated_node is not None:
            info = self.queue.get(result.uid)
            if result.nominated_node and info is not None:
                self.nominator.nominate(result.uid, result.nominated_node, info.priority)
            else:
                self.nominator.forget(result.uid)
        for uid in result.cleared_nominations:
            self.nominator.forget(uid)

    def _prune_waiting(self) -> int:
        """Forget waits whose attempt is no longer in flight (the pod was deleted, or
        a resync started another attempt); returns how many are left."""
        gone = [u for u, a in self.waiting.items() if self.queue.in_flight_attempt(u) != a]
        for uid in gone:
            del self.waiting[uid]
        return len(self.waiting)

    async def start(self) -> None:
        await self._bus.declare(topology.QUEUES)
        await self._projection.reload()
        self._consumers = [
            await self._bus.consume(
                topology.QUEUE_CLUSTER, self._on_cluster, decode=ClusterBatch, max_batch=64
            ),
            await self._bus.consume(
                topology.QUEUE_RESULTS, self._on_results, decode=ResultBatch, max_batch=256
            ),
        ]
        self._tasks = [
            asyncio.create_task(self._dispatch_loop(), name="queue-dispatch"),
            asyncio.create_task(self._timer_loop(), name="queue-timers"),
        ]
        self.metrics = serve_metrics(self.registry, self._metrics_port)
        self._wake.set()

    async def stop(self) -> None:
        for consumer in self._consumers:
            await consumer.cancel()
        for task in self._tasks:
            task.cancel()
        if self._tasks:  # not `await task`: suppressing its CancelledError would swallow ours
            await asyncio.wait(self._tasks)
        self._consumers, self._tasks = [], []
        close_endpoint(self.metrics)
        self.metrics = None
        try:
            await self._publish_view(force=True)
        except Exception:
            log.exception("could not publish the queue view on stop")

    @property
    def held(self) -> bool:
        return self._held

    def hold(self) -> None:
        """Stop dispatching (attempts in flight finish) until :meth:`release`."""
        self._held = True

    def release(self) -> None:
        self._held = False
        self._wake.set()

    # -- cluster events ---------------------------------------------------------------

    async def _on_cluster(self, batches: Sequence[Received[ClusterBatch]]) -> None:
        try:
            await self._projection.feed([event for b in batches for event in b.value.events])
            await self._flush()
        except StoreLost as lost:
            await self._recover(lost)
        await self._publish_groups()
        self._wake.set()

    async def _publish_groups(self) -> None:
        """Publish the status of the PodGroups whose members or spec changed (only when
        it changed), on ``ksched.decisions`` as ``podgroup.<namespace>``."""
        messages = group_messages([*self._groups.changed(), *self._native_groups.changed()])
        if not messages:
            return
        try:
            await self._bus.publish(messages)
        except Exception:
            log.exception("could not publish the status of %d PodGroups", len(messages))

    def _apply(self, events: Sequence[LogEntry]) -> None:
        """Cluster events from the projection: in seq order, each once."""
        for event in events:
            in_flight = None
            if isinstance(event, PodEntry):
                obj = event.object
                if self.preempting and (
                    event.type == "DELETED" or obj.metadata.deletion_timestamp is not None
                ):
                    self.preempting.gone(obj.metadata.uid)  # before the hints look at it
                in_flight = self.queue.in_flight_attempt(obj.metadata.uid)
            began = time.perf_counter()
            self.handlers.handle(event)
            self.queue_metrics.handled(event_label(event), time.perf_counter() - began)
            if in_flight is not None and isinstance(event, PodEntry):
                uid = event.object.metadata.uid
                if self.queue.in_flight_attempt(uid) is None:
                    # It left the queue (its Binding was recorded, or it was deleted)
                    # before its attempt reported: the attempt's result will be ignored,
                    # so its lease is dropped here (on the next flush or tick).
                    self._ended.add(uid)
                    self.waiting.pop(uid, None)
            self._groups.apply(event)
            self._native_groups.apply(event)
            if isinstance(event, PodEntry):
                self._note_origin(event)
                if event.type == "DELETED" or event.object.spec.node_name:
                    self._binding.discard(event.object.metadata.uid)
                    self.preempting.forget(event.object.metadata.uid)  # its own, if any

    def _note_origin(self, event: PodEntry) -> None:
        uid = event.object.metadata.uid
        if uid in self.queue:
            self._origin.setdefault(uid, (event.at or self._clock.now(), event.trace))
        else:
            self._origin.pop(uid, None)

    async def observe(self) -> None:
        """Periodic measurements (run_service's watchdog): the projection's lag."""
        lag = await self._store.applied_seq() - self._projection.applied_seq
        self.queue_metrics.projection_lag.labels("queue").set(max(lag, 0))

    async def _recover(self, lost: StoreLost) -> None:
        """After StoreLost: reload once the informer has rebuilt the store (see
        :meth:`_load`), unless another task already did."""
        await self._projection.reload(lost)

    async def _load(self, epoch: Epoch, lost: StoreLost | None) -> None:
        """Converge on the store: objects, leases and nominations, with no cluster event
        or attempt result applied meanwhile. After a StoreLost, first write back what
        went with the store: the leases of the attempts in flight, the nominations."""
        async with self._converging:
            if lost is not None:
                in_flight = {
                    info.uid: attempt
                    for info in self.queue.pods()
                    if (attempt := self.queue.in_flight_attempt(info.uid)) is not None
                }
                await self._store.set_leases(in_flight)
                await self._store.set_nominations(dict(self.nominator.nominations))
                await preemptions.write_back(self.preempting, self._store)
            else:
                await preemptions.flush(self.preempting, self._store)
            pods = _decode(await self._store.objects("pod"), Pod)
            # Before the resync: DefaultPreemption's PreEnqueue keeps a preemptor whose
            # victims are still there out of activeQ.
            await preemptions.load(self.preempting, self._store, pods)
            self._binding &= {p.metadata.uid for p in pods if not p.spec.node_name}
            pods = [p for p in pods if p.metadata.uid not in self._binding]
            nodes = _decode(await self._store.objects("node"), Node)
            classes = _decode(await self._store.objects("priorityclass"), PriorityClass)
            volumes: list[Volume] = []
            for kind, cls in VOLUME_KINDS.items():
                volumes.extend(_decode(await self._store.objects(kind), cls))
            listed = {kind: await self._store.objects(kind) for kind in _LISTED_KINDS}
            for listers in self.queue.listers:
                listers.load(listed)
                listers.scheduling_group_members.load(pods)
            self._groups.load(_decode(listed["podgroup"], PodGroup), pods)
            native = _decode(listed["schedulingpodgroup"], SchedulingPodGroup)
            self._native_groups.load(native, pods)
            leases = await self._store.leases()
            self.nominator.load(await self._store.nominations())
            self.handlers.resync(ClusterState(pods, nodes, volumes, classes, leases))
            for uid, record in (await self._store.waiting()).items():
                # An attempt waiting at Permit survives a queue restart: it stays in
                # flight (no credit), its wait and reservation hold, no new attempt.
                if leases.get(uid) == record.attempt and self.queue.adopt(uid, record.attempt):
                    self.waiting[uid] = record.attempt
            now = self._clock.now()
            self._origin = {
                info.uid: self._origin.get(info.uid, (now, {})) for info in self.queue.pods()
            }
            await self.nominator.flush(self._store)
        gctune.settle()
        log.debug("converged on the store at seq %d (%s)", epoch.seq, epoch.state)

    # -- dispatch ---------------------------------------------------------------------

    async def _dispatch_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._dispatch_while_credit()
            except Exception:
                # A failed dispatch's recovery failed too (the store restarting under
                # it): the loop outlives it, or no one would hand the pods out.
                log.exception("dispatching failed; trying again in %.0f s", DISPATCH_RETRY)
                await self._clock.sleep(DISPATCH_RETRY)
                self._wake.set()

    async def _dispatch_while_credit(self) -> None:
        while not self._held:
            credit = self._max_in_flight - self.in_flight
            limit = min(credit, self._batch_size)
            batch = self.queue.pop(limit, self._unreported_gangs()) if credit > 0 else []
            if not batch:
                return
            try:
                await self._dispatch(batch)
            except StoreLost as lost:
                for info in batch:
                    self.queue.retry(info.uid)
                await self._recover(lost)
            except Exception:
                log.exception("dispatch of %d pods failed; they go back to activeQ", len(batch))
                for info in batch:
                    self.queue.retry(info.uid)
                await self._clock.sleep(DISPATCH_RETRY)

    async def _dispatch(self, batch: Sequence[QueueEntry]) -> None:
        self.dispatched += len(batch)
        requests: list[ScheduleRequest] = []
        leases: dict[str, int] = {}
        for info in batch:
            uid = info.uid
            origin = self._origin.get(uid, (self._clock.now(), {}))
            requests.append(schedule_request(info, origin, self._projection.applied_seq))
            leases[uid] = info.attempts
            if (group := gang_of(info.pod)) is not None:
                self._gangs_out[uid] = (group, info.attempts)
        await self._store.set_leases(leases)
        body = _encoder.encode(ScheduleBatch(requests=requests, forgotten=self.forgotten))
        traces = [r.trace for r in requests]
        await self._bus.publish(
            [Message(topology.SCHEDULE.name, topology.SCHEDULE_KEY, body, traces=traces)]
        )
        if self._on_dispatch is not None:
            self._on_dispatch()

    # -- results ----------------------------------------------------------------------

    async def _on_results(self, batches: Sequence[Received[ResultBatch]]) -> None:
        ended: list[str] = []
        async with self._converging:  # a resync's older snapshot must not revive a bound pod
            for batch in batches:
                for result in batch.value.results:
                    if self.queue.in_flight_attempt(result.uid) != result.attempt:
                        continue
                    self._gangs_out.pop(result.uid, None)
                    if result.outcome != "waiting":
                        self.waiting.pop(result.uid, None)
                        ended.append(result.uid)
                    self._result(result)
        self._ended.update(ended)
        try:
            if ended:
                await self._drop_ended_leases()
            await self._flush()
        except StoreLost as lost:
            await self._recover(lost)
            # A load may have written these leases back while the attempts were still
            # in flight; drop them again (or from the timers, until the store takes it).
            with contextlib.suppress(StoreLost):
                await self._drop_ended_leases()
        self._wake.set()

    def _result(self, result: AttemptResult) -> None:
        """One attempt's result for the queue (its attempt is the one in flight)."""
        uid = result.uid
        info = self.queue.get(uid)
        sort = self.queue.queue_sort
        if implements(sort, AttemptObserver) and info is not None and result.outcome != "waiting":
            observer = cast(AttemptObserver, sort)
            observer.attempt_ended(info.pod, result.outcome, result.message, result.forgotten)
        held = self._holding(info, result) if result.forgotten else None
        if held is not None and result.outcome == "error":
            self._room_freed(held, uid)  # upstream moves first when no plugin rejected it
        match result.outcome:
            case "waiting":
                self.waiting[uid] = result.attempt
            case "bound":
                self._binding.add(uid)
                self.queue.done(uid)
                self.nominator.forget(uid)
                self._origin.pop(uid, None)
            case "unschedulable":
                if info is not None:
                    self._native_groups.attempt_failed(info.pod, result.message)
                self._nominate(result)
                self.queue.add_unschedulable_if_not_present(
                    uid, result.plugins, message=result.message
                )
            case "error" | "stale":
                # No plugin to blame: the pod backs off in the error backoffQ.
                self.queue.add_unschedulable_if_not_present(uid, (), message=result.message)
        if held is not None and result.outcome != "error":
            self._room_freed(held, uid)  # after the failure put the rejected pod away
        if result.activate:
            self.queue.activate(result.activate)

    def _holding(self, info: QueueEntry | None, result: AttemptResult) -> Pod | None:
        """The pod as it held its room (on ``result.node``), for an assumption the
        binding cycle forgot (counted for ScheduleBatch.forgotten)."""
        self.forgotten += 1
        if info is None:
            return None
        spec = msgspec.structs.replace(info.pod.spec, node_name=result.node)
        return msgspec.structs.replace(info.pod, spec=spec)

    def _room_freed(self, held: Pod, uid: str) -> None:
        """``handleBindingCycleError``'s move: the room ``held`` had is free again, as if
        an assigned pod were deleted; the pod ``uid`` itself stays where it is."""

        def others(candidate: QueueEntry) -> bool:
            return candidate.uid != uid

        self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, held, None, others)

    async def _flush(self) -> None:
        """Write the nominations and the preemptions in flight that changed."""
        await self.nominator.flush(self._store)
        await preemptions.flush(self.preempting, self._store)

    async def _drop_ended_leases(self) -> None:
        """Forget the leases of the attempts that ended; kept to retry on StoreLost."""
        if self._ended:
            ended = sorted(self._ended)
            await self._store.drop_leases(ended)
            self._ended.difference_update(ended)

    # -- timers -----------------------------------------------------------------------

    async def _timer_loop(self) -> None:
        ticks = 0
        leftover_every = max(1, round(LEFTOVER_FLUSH_PERIOD / FLUSH_PERIOD))
        while True:
            now = self._clock.now()
            await self._clock.sleep((math.floor(now / FLUSH_PERIOD) + 1) * FLUSH_PERIOD - now)
            ticks += 1
            try:
                moved = self.queue.flush_backoff_q_completed()
                if ticks % leftover_every == 0:
                    moved += self.queue.flush_unschedulable_pods_leftover()
                if moved:
                    self._wake.set()
                await self._drop_ended_leases()
                if self.preempting.expire(self._clock.now()):
                    await self._flush()
                await self._publish_pod_status()
                await self._publish_view()
            except Exception:
                log.exception("queue timers failed; retrying on the next tick")

    async def _publish_pod_status(self) -> None:
        """The PodScheduled conditions (and Events) PreEnqueue's outcomes set once their
        5 s are over (KEP-5501, see pod_status), on ``ksched.decisions``. One that cannot
        be published is lost, as upstream's failed patch: the next change re-sends."""
        updates = self.queue.pod_status.due()
        try:
            if updates:
                await self._bus.publish(status_messages(updates))
        except Exception:
            log.exception("could not publish the PodScheduled condition of %d pods", len(updates))

    async def _publish_view(self, *, force: bool = False) -> None:
        """Publish the view if anything changed since the last one."""
        applied = self._projection.applied_seq
        state = (self.queue.version, applied)
        if state == self._published and not force:
            return
        view = queue_view(self.queue, at=self._clock.now(), applied_seq=applied)
        await self._store.put_queue_view(_encoder.encode(view))
        self._published = state


def _decode(objects: dict[str, bytes], cls: type[Any]) -> list[Any]:
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(cls)
    return [decoder.decode(body) for body in objects.values()]
