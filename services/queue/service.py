"""The queue service: keeps the SchedulingQueue fed from ``ksched.cluster`` and hands pods
to the scheduler replicas on ``ksched.schedule``, at most ``max_in_flight`` at a time.

Bounded credit keeps the order under load: pods are popped from activeQ only when a
slot is free, so a high-priority pod published behind a large backlog is among the next
ones dispatched. Each dispatch records the attempt as the pod's lease in the store
before it is published; a result for any other attempt is ignored.

After a restart (or a gap in the cluster stream) the queue reloads the pending pods and
the leases from the store: a pod that had an attempt in flight is attempted again,
once, with the next attempt number, and the older attempt can no longer reserve.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection, Sequence

import msgspec

from contracts import topology
from contracts.events import ClusterBatch, ClusterEvent, NodeEvent, PodEvent, PriorityClassEvent
from contracts.k8s import DEFAULT_SCHEDULER_NAME, Pod, PriorityClass, namespaced_name
from contracts.messages import ResultBatch, ScheduleBatch, ScheduleRequest
from services.common import telemetry
from services.common.bus import Bus, Consumer, Delivery, Message
from services.common.clock import Clock
from services.common.store import ClusterStore
from services.queue.priority import PriorityClasses
from services.queue.scheduling_queue import QueuedPodInfo, SchedulingQueue

log = logging.getLogger("ksched.queue")
tracer = telemetry.tracer("queue")

_encoder = msgspec.json.Encoder()
_TERMINAL = frozenset({"Succeeded", "Failed"})
LEFTOVER_FLUSH_EVERY = 30
"""Seconds between checks for pods parked longer than the unschedulable timeout."""


class QueueService:
    def __init__(
        self,
        bus: Bus,
        store: ClusterStore,
        clock: Clock,
        *,
        profiles: Collection[str] = (DEFAULT_SCHEDULER_NAME,),
        max_in_flight: int = 512,
        batch_size: int = 128,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        hold: bool = False,
    ) -> None:
        """``hold``: accept events but dispatch nothing until :meth:`release` (the embedded
        simulator loads a whole cluster before the first attempt)."""
        self._bus = bus
        self._store = store
        self._clock = clock
        self._profiles = frozenset(profiles)
        self._max_in_flight = max_in_flight
        self._batch_size = batch_size
        self.queue = SchedulingQueue(initial_backoff=initial_backoff, max_backoff=max_backoff)
        self._classes = PriorityClasses()
        self._seq = 0
        self._in_flight: dict[str, int] = {}
        self._origin: dict[str, tuple[float, dict[str, str]]] = {}
        self._wake = asyncio.Event()
        self._held = hold
        self._consumers: list[Consumer] = []
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def serves(self) -> frozenset[str]:
        """The schedulerNames whose pods this queue takes."""
        return self._profiles

    @property
    def applied_seq(self) -> int:
        return self._seq

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def start(self) -> None:
        await self._bus.declare(topology.QUEUES)
        await self._resync()
        self._consumers = [
            await self._bus.consume(topology.QUEUE_CLUSTER, self._on_cluster, max_batch=64),
            await self._bus.consume(topology.QUEUE_RESULTS, self._on_results, max_batch=256),
        ]
        self._tasks = [
            asyncio.create_task(self._dispatch_loop(), name="queue-dispatch"),
            asyncio.create_task(self._timer_loop(), name="queue-timers"),
        ]
        self._wake.set()

    async def stop(self) -> None:
        for consumer in self._consumers:
            await consumer.cancel()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._consumers, self._tasks = [], []

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

    async def _on_cluster(self, deliveries: Sequence[Delivery]) -> None:
        decoder = msgspec.json.Decoder(ClusterBatch)
        for delivery in deliveries:
            for event in decoder.decode(delivery.body).events:
                if event.seq <= self._seq:
                    continue
                if event.seq > self._seq + 1:
                    log.warning("gap in the cluster stream (%d → %d): resync", self._seq, event.seq)
                    await self._resync()
                    if event.seq <= self._seq:
                        continue
                self._seq = event.seq
                self._apply(event)
        self._wake.set()

    def _apply(self, event: ClusterEvent) -> None:
        now = self._clock.now()
        match event:
            case PodEvent(object=pod, type=type_):
                uid = pod.metadata.uid
                frees = bool(pod.spec.node_name) and (
                    type_ == "DELETED" or pod.status.phase in _TERMINAL
                )
                if type_ != "DELETED" and self._pending(pod):
                    priority = self._classes.priority_of(pod)
                    if uid in self.queue:
                        self.queue.update(pod, priority, now)
                    else:
                        self._origin[uid] = (event.at or now, event.trace)
                        self.queue.add(pod, priority, now, event.seq)
                else:
                    self._forget(uid)
                if frees:
                    self.queue.move_all(now)
            case NodeEvent(type=type_) if type_ != "DELETED":
                self.queue.move_all(now)
            case PriorityClassEvent(object=priority_class, type=type_):
                if type_ == "DELETED":
                    self._classes.delete(priority_class.metadata.name)
                else:
                    self._classes.put(priority_class)
            case PodEvent() | NodeEvent() | PriorityClassEvent():
                pass
            case _:
                self.queue.move_all(now)

    def _pending(self, pod: Pod) -> bool:
        return (
            not pod.spec.node_name
            and pod.spec.scheduler_name in self._profiles
            and pod.status.phase not in _TERMINAL
            and pod.metadata.deletion_timestamp is None
        )

    def _forget(self, uid: str) -> None:
        self.queue.delete(uid)
        self._in_flight.pop(uid, None)
        self._origin.pop(uid, None)

    async def _resync(self) -> None:
        """Rebuild from the store: pending pods, priority classes, leases."""
        seq = await self._store.applied_seq()
        classes = await self._store.objects("priorityclass")
        pods = await self._store.objects("pod")
        leases = await self._store.leases()
        self._classes = PriorityClasses()
        for body in classes.values():
            self._classes.put(msgspec.json.decode(body, type=PriorityClass))
        now = self._clock.now()
        decoded = [msgspec.json.decode(body, type=Pod) for body in pods.values()]
        decoded.sort(key=lambda p: (p.metadata.creation_timestamp or "", p.metadata.name))
        pending = {p.metadata.uid: p for p in decoded if self._pending(p)}
        for uid in [info.uid for info in self.queue.pods() if info.uid not in pending]:
            self._forget(uid)
        for order, (uid, pod) in enumerate(pending.items()):
            priority = self._classes.priority_of(pod)
            if uid in self.queue:
                self.queue.update(pod, priority, now)
            else:
                self._origin.setdefault(uid, (now, {}))
                self.queue.add(
                    pod, priority, now, -len(pending) + order, attempts=leases.get(uid, 0)
                )
        self._seq = max(self._seq, seq)

    # -- dispatch ---------------------------------------------------------------------

    async def _dispatch_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while not self._held:
                credit = self._max_in_flight - len(self._in_flight)
                batch = self.queue.pop(min(credit, self._batch_size)) if credit > 0 else []
                if not batch:
                    break
                try:
                    await self._dispatch(batch)
                except Exception:
                    log.exception("dispatch of %d pods failed; they go back to activeQ", len(batch))
                    for info in batch:
                        self._in_flight.pop(info.uid, None)
                        self.queue.retry_now(info.uid)
                    await self._clock.sleep(1.0)

    async def _dispatch(self, batch: Sequence[QueuedPodInfo]) -> None:
        requests: list[ScheduleRequest] = []
        leases: dict[str, int] = {}
        for info in batch:
            uid = info.uid
            at, carrier = self._origin.get(uid, (self._clock.now(), {}))
            with tracer.start_as_current_span(
                "scheduling_queue.pop", context=telemetry.extract(carrier)
            ) as span:
                span.set_attribute("ksched.pod", namespaced_name(info.pod.metadata))
                span.set_attribute("ksched.attempt", info.attempts)
                requests.append(
                    ScheduleRequest(
                        pod=info.pod,
                        attempt=info.attempts,
                        profile=info.pod.spec.scheduler_name,
                        seq=self._seq,
                        at=at,
                        trace=telemetry.inject(),
                    )
                )
            leases[uid] = info.attempts
            self._in_flight[uid] = info.attempts
        await self._store.set_leases(leases)
        body = _encoder.encode(ScheduleBatch(requests=requests))
        await self._bus.publish([Message(topology.SCHEDULE.name, topology.SCHEDULE_KEY, body)])

    # -- results ----------------------------------------------------------------------

    async def _on_results(self, deliveries: Sequence[Delivery]) -> None:
        decoder = msgspec.json.Decoder(ResultBatch)
        now = self._clock.now()
        ended: list[str] = []
        for delivery in deliveries:
            for result in decoder.decode(delivery.body).results:
                if self._in_flight.get(result.uid) != result.attempt:
                    continue
                del self._in_flight[result.uid]
                ended.append(result.uid)
                match result.outcome:
                    case "bound":
                        self._forget(result.uid)
                    case "unschedulable":
                        self.queue.failed(
                            result.uid, now, result.plugins, error=False, message=result.message
                        )
                    case "error" | "stale":
                        self.queue.failed(
                            result.uid, now, result.plugins, error=True, message=result.message
                        )
        if ended:
            await self._store.drop_leases(ended)
        self._wake.set()

    # -- timers -----------------------------------------------------------------------

    async def _timer_loop(self) -> None:
        tick = 0
        while True:
            await self._clock.sleep(1.0)
            tick += 1
            now = self._clock.now()
            moved = self.queue.flush_backoff(now)
            if tick % LEFTOVER_FLUSH_EVERY == 0:
                moved += self.queue.flush_leftover(now)
            if moved:
                self._wake.set()
