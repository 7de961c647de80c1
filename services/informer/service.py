"""The informer: the single writer of the event log.

For every batch of watch events (and of the binder's BoundBatches: the Bindings it
published):

1. validate each (a bad one becomes an ErrorReport on ``ksched.errors``, as does a pod
   bound to an unknown node or an object whose uid another live object has);
2. reconcile it with the current view (duplicates and stale versions change nothing),
   followed by what ksched's resourceclaim controller writes after it
   (:mod:`services.informer.claims`: claims generated from templates, released when
   their pod ends), as entries of origin ``controller``;
3. give each change the next seq and append them to the log (durable);
4. apply them to the store projection (one atomic call);
5. republish them as one ClusterBatch on ``ksched.cluster``;
6. return, so the bus acknowledges the inbound messages.

A crash anywhere in steps 3 to 5 is repaired by :meth:`InformerService.catch_up`, which runs at
start and after any failed commit: log entries the store has not applied are applied and
republished (consumers skip seqs they have seen), and the tail of the log is
republished in any case. The log is the truth.

A store that lost its projection (see :mod:`services.informer.rebuild`) is found by that
same catch-up: at start, when an apply raises StoreLost, and every
:data:`STORE_CHECK_PERIOD` seconds while running. It is rebuilt from the log's newest
snapshot and the entries after it (one WARNING line says what was lost and what was
rebuilt) before ingest resumes. Snapshots are taken between batches
(:mod:`services.informer.snapshots`).

One informer writes: the leader of the ``informer`` lease, its store client fenced and
the log claimed with the lease's token (a deposed one stops: services.informer.leadership).

An event log that refuses an append (disk full, fsync failed) stops ingest: the batch
raises (its messages are not acknowledged: they are requeued), one ERROR line says why,
the consumers are cancelled and the same append is retried with backoff (0.5 s doubling
to 30 s); once it succeeds the informer catches up and consumes again (the requeued
messages are then duplicates). :attr:`InformerService.ready` is False meanwhile.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec
from opentelemetry import trace
from prometheus_client import CollectorRegistry, Gauge, Histogram

from contracts import topology
from contracts.errors import ErrorReport
from contracts.events import ENTRY_FOR_KIND, LogEntry, Origin
from contracts.k8s import Binding, Pod
from contracts.kinds import KINDS
from contracts.messages import BoundBatch
from services.common import telemetry
from services.common.bus import Bus, Consumer, Delivery, Message
from services.common.clock import Clock
from services.common.eventlog import EventLog, LogWriteError, check_matches
from services.common.eventlog.encoded import entry_line
from services.common.eventlog.snapshot import read_tail
from services.common.metrics import exponential_buckets
from services.common.redact import redact_report
from services.common.store import ClusterStore, Deposed, Epoch
from services.informer import claims, rebuild, startup
from services.informer.leadership import Leadership
from services.informer.outputs import admitted_priority, cluster_message, projected
from services.informer.snapshots import SnapshotPolicy, SnapshotWriter
from services.informer.state import Change, ClusterObjects, Staged
from services.informer.validate import Accepted, object_key, validate

log = logging.getLogger("ksched.informer")
tracer = telemetry.tracer("informer")

_encoder = msgspec.json.Encoder()
_bound_decoder = msgspec.json.Decoder(BoundBatch | Binding)
REPUBLISH_TAIL = 512
"""Log entries republished at start even if already applied (see InformerService.catch_up)."""
STORE_CHECK_PERIOD = 1.0
"""Seconds between checks that the store still holds the projection (a quiet informer
notices a lost store within this, not at the next event)."""
FSYNC_BUCKETS = exponential_buckets(0.0001, 2, 16)
"""0.1 ms to ~3 s."""
LOG_RETRY_MAX = 30.0
"""Longest wait, in seconds, between two attempts to write to a refusing event log."""


_Changes = list[tuple[Change, dict[str, str]]]
"""Staged changes, each with the trace carrier of the delivery that made it."""
_Stage = Callable[[Staged, Delivery, _Changes, list[ErrorReport]], None]
"""Stages what one delivery changes and reports (:meth:`InformerService._apply`)."""


class InformerService:
    def __init__(
        self,
        bus: Bus,
        store: ClusterStore,
        event_log: EventLog,
        clock: Clock,
        *,
        rng: random.Random | None = None,
        generate_claims: bool = True,
        snapshots: SnapshotPolicy | None = None,
        confirm: Callable[[], Awaitable[None]] | None = None,
        batch_wait: float = 0.0,
    ) -> None:
        """``rng``: the random suffixes of generated claim names (seeded in the embedded
        mode, so a run is reproducible). ``generate_claims``: run ksched's resourceclaim
        controller (off for a replay: the log holds what it wrote). ``snapshots``: when
        to write snapshots of the projection and drop what they cover (None: never).
        ``confirm``: raises Deposed unless this informer still leads (Leadership).
        ``batch_wait``: the linger of the watch events' consumer (bus.linger; 0 in the
        embedded mode, whose events are all published before it runs)."""
        self._batch_wait = batch_wait
        self.leadership = Leadership(event_log, confirm, clock)
        self._rng = rng or random.Random()
        self._generate_claims = generate_claims
        self._bus = bus
        self._store = store
        self._log = event_log
        self._clock = clock
        self._objects = ClusterObjects()
        self.snapshots = None if snapshots is None else SnapshotWriter(event_log, clock, snapshots)
        self._lock = asyncio.Lock()
        self._consumers: list[Consumer] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.registry = CollectorRegistry(auto_describe=True)
        """``ksched_event_log_bytes`` and ``ksched_event_log_fsync_duration_seconds``."""
        size = Gauge("ksched_event_log_bytes", "Size of the event log", registry=self.registry)
        size.set_function(lambda: float(getattr(event_log, "size_bytes", 0)))
        fsync = Histogram(
            "ksched_event_log_fsync_duration_seconds",
            "One fsync of the event log (one per append of a batch)",
            buckets=FSYNC_BUCKETS,
            registry=self.registry,
        )
        if hasattr(event_log, "on_fsync"):
            event_log.on_fsync = fsync.observe
        self._epoch: Epoch | None = None
        """The store as this informer last made it live (its token and seq)."""
        self._known: rebuild.Known | None = None
        """The marker, identity and last seq applied of the store this informer made
        live: a failover that loses writes is told by these (rebuild.find_failover)."""
        self._rebuilding = False
        self._log_fault: LogWriteError | None = None
        self._catch_up_due = False
        """A catch-up started and has not succeeded since (the broker or the store was
        down): run again before the next batch and by the store check until it does."""
        self.deposed = self.leadership.deposed

    @property
    def ready(self) -> bool:
        """True while events are ingested: started, the store live (not being rebuilt)
        and the event log writable."""
        return bool(self._consumers) and self._log_fault is None and not self._rebuilding

    async def start(self) -> None:
        declare = lambda: self._bus.declare(topology.QUEUES)  # noqa: E731
        # A stream's broker and where it ends, the queues, the store: patient (startup).
        await startup.until_available(self._clock, self._log.connect, declare, self.catch_up)
        if self.snapshots is not None:
            await self.snapshots.start()
        await self._consume()
        self._tasks = [asyncio.create_task(self._watch_store(), name="informer-store-check")]

    async def _consume(self) -> None:
        self._consumers = [
            # Raw: watch events are validated field by field (services.informer.validate)
            # and a malformed Binding is an error report, not a dead letter.
            await self._bus.consume_raw(
                topology.INFORMER_EVENTS, self._on_events, max_batch=256, linger=self._batch_wait
            ),
            await self._bus.consume_raw(
                topology.INFORMER_BINDINGS, self._on_bindings, max_batch=256
            ),
        ]

    async def _stop_consuming(self) -> None:
        consumers, self._consumers = self._consumers, []
        for consumer in consumers:
            await consumer.cancel()

    async def stop(self) -> None:
        await self._stop_consuming()
        for task in self._tasks:
            task.cancel()
        if self._tasks:  # not `await task`: suppressing its CancelledError would swallow ours
            await asyncio.wait(self._tasks)
        self._tasks = []
        if self.snapshots is not None:
            await self.snapshots.wait()

    async def catch_up(self) -> None:
        """Make the store and the republished stream match the log, then reload the view."""
        async with self._lock:
            await self._catch_up()

    async def _watch_store(self) -> None:
        """Notice a lost store while no event arrives (an apply would notice it too)."""
        while True:
            await self._clock.sleep(STORE_CHECK_PERIOD)
            try:
                # Checked under the lock: a batch being committed sets _catch_up_due
                # until its store apply and publish are done, which is no reason to
                # catch up once it has finished.
                async with self._lock:
                    current, known = await self._store.epoch(), self._known
                    if (
                        self._catch_up_due
                        or known is None
                        or (current.state, current.token) != ("live", known.token)
                        or current.seq < known.seq
                        or await self._store.identity() != known.identity
                    ):
                        await self._catch_up()
                    self._take_snapshot()  # by time: a quiet log gets one too
            except Exception:
                log.exception("checking the store failed; again in %.0f s", STORE_CHECK_PERIOD)

    def _log_refused(self, events: Sequence[LogEntry], error: LogWriteError) -> None:
        """Stop ingest until ``events`` can be appended (see the module docstring)."""
        if self._log_fault is not None:
            return
        self._log_fault = error
        log.error("%s: ingest stops until the event log is writable again", error)
        self._tasks.append(
            asyncio.create_task(self._retry_log(list(events)), name="informer-log-retry")
        )

    async def _retry_log(self, events: list[LogEntry]) -> None:
        await self._stop_consuming()  # the batch that failed is requeued, not acknowledged
        delay, waited = 0.5, 0.0
        while True:
            await self._clock.sleep(delay)
            waited += delay
            try:
                async with self._lock:
                    if self._log.last_seq() < events[-1].seq:
                        await self._log.append(events)
                    await self._catch_up()
                break
            except LogWriteError as error:
                log.debug("the event log still refuses appends: %s", error)
            except Exception:
                log.exception("catching up after the event log recovered failed")
            delay = min(delay * 2, LOG_RETRY_MAX)
        self._log_fault = None
        await self._consume()
        log.warning(
            "the event log is writable again after %.1f s: ingest resumed at seq %d",
            waited,
            self._log.last_seq(),
        )

    async def _catch_up_if_due(self) -> None:
        """Finish a catch-up that failed (held lock): the entries it was to republish
        reach ``ksched.cluster`` before anything newer. Raises while it still fails."""
        if self._catch_up_due:
            log.info("retrying the catch-up that failed before this batch")
            await self._catch_up()

    async def _catch_up(self) -> None:
        self._catch_up_due = True  # until this returns
        expected = self._epoch
        self._rebuilding = True
        try:
            identity = await self._store.identity()
            failover = await rebuild.find_failover(self._store, self._known, identity)
            if failover is not None:
                log.warning("%s", failover.line)
            tail_only = failover is not None and failover.invalidated
            rebuilt = await rebuild.ensure_live(
                self._store, self._log, projected, tail_only=tail_only
            )
        finally:
            self._rebuilding = False
        self._epoch = await self._store.epoch()
        applied = self._epoch.seq
        last = self._log.last_seq()
        name = rebuild.log_name(self._log)
        check_matches(name, last, applied)
        # The tail is republished even when the store has it: a crash between the store
        # apply and the publish would otherwise leave consumers without those entries.
        # Consumers skip seqs they have applied, and reload from the store on a gap
        # (one behind the log's first entry, after retention, too). Read in chunks: the
        # store may be far behind a long log; it must not be behind the log's first.
        first: int | None = None
        chunk: list[LogEntry] = []
        after = min(applied, max(0, last - REPUBLISH_TAIL))
        async for event in read_tail(self._log, after, name, need=applied + 1):
            chunk.append(event)
            if len(chunk) == rebuild.CHUNK or event.seq == last:
                await self._store.apply([projected(e) for e in chunk])
                await self._bus.publish([cluster_message(chunk)])
                first = chunk[0].seq if first is None else first
                chunk = []
        self._objects = ClusterObjects()
        counts: dict[str, int] = {}
        for kind, cls in KINDS.items():
            decoder = msgspec.json.Decoder(cls)
            stored = await self._store.objects(kind)
            counts[kind] = len(stored)
            self._objects.load(kind, ((k, decoder.decode(v)) for k, v in stored.items()))
        if rebuilt is not None:
            token = expected.token if expected is not None else None
            log.warning("%s", rebuild.describe(rebuilt, token, counts))
        if first is not None:
            log.info("republished log entries %d..%d", first, last)
        self._known = rebuild.Known(self._epoch.token, last, identity)
        self._catch_up_due = False

    async def _on_events(self, deliveries: Sequence[Delivery]) -> None:
        await self._apply(deliveries, self._stage_event, origin="user")

    async def _on_bindings(self, deliveries: Sequence[Delivery]) -> None:
        await self._apply(deliveries, _stage_bindings, origin="binding")

    async def _apply(
        self, deliveries: Sequence[Delivery], stage: _Stage, *, origin: Origin
    ) -> None:
        """One batch: under the lock, after a due catch-up, ``stage`` adds each
        delivery's changes and reports to the staged objects; then one commit."""
        async with self._lock:
            await self._catch_up_if_due()
            staged = self._objects.stage()
            changes: _Changes = []
            reports: list[ErrorReport] = []
            for delivery in deliveries:
                stage(staged, delivery, changes, reports)
            await self._commit(staged, changes, reports, origin=origin)
            self._take_snapshot()

    def _take_snapshot(self) -> None:
        """Snapshot the view if one is due and the view is the whole log (held lock; no
        catch-up due, no append refused: :mod:`services.informer.snapshots`)."""
        if self.snapshots is not None and not self._catch_up_due and self._log_fault is None:
            self.snapshots.maybe_take(self._objects, self._log.last_seq())

    def _stage_event(
        self,
        staged: Staged,
        delivery: Delivery,
        changes: _Changes,
        reports: list[ErrorReport],
    ) -> None:
        """A user's watch event, in its ``ingest`` span (continuing the publisher's)."""
        with telemetry.continuing(tracer, "ingest", delivery.headers) as continued:
            span = continued.span
            span.set_attribute("ksched.routing_key", delivery.routing_key)
            try:
                outcome = self._ingest(staged, delivery)
            except Exception as error:  # one bad message never fails its batch
                log.exception("validating a %s message failed", delivery.routing_key)
                outcome = _internal_report(delivery, error)
            if isinstance(outcome, ErrorReport):
                span.set_status(trace.StatusCode.ERROR, outcome.reason)
                reports.append(outcome)
                return
            span.set_attribute("ksched.duplicate", outcome is None)
            if outcome is not None:
                carrier = continued.carrier()
                changes.append((outcome, carrier))
                changes.extend((c, carrier) for c in self._controller(staged, outcome))

    def _controller(self, staged: Staged, change: Change) -> list[Change]:
        """What ksched's resourceclaim controller writes after ``change`` (staged)."""
        if not self._generate_claims:
            return []
        try:
            derived = claims.react(staged, change, self._rng)
        except Exception:  # the user's event is kept; only the controller's work is lost
            log.exception("the resourceclaim controller failed on %s %s", change.kind, change.key)
            return []
        return [dataclasses.replace(c, origin="controller") for c in derived]

    def _ingest(self, staged: Staged, delivery: Delivery) -> Change | ErrorReport | None:
        """The change one watch event makes (staged), its report, or None (a duplicate)."""
        result = validate(delivery.body, delivery.routing_key)
        if isinstance(result, ErrorReport):
            return result
        problem = _check_references(staged, result)
        if problem is not None:
            return problem
        obj = result.object
        if isinstance(obj, Pod) and result.type != "DELETED":
            obj = admitted_priority(staged, obj)
        return staged.reconcile(result.kind, result.key, result.type, obj)

    async def _commit(
        self,
        staged: Staged,
        changes: Sequence[tuple[Change, dict[str, str]]],
        reports: Sequence[ErrorReport],
        *,
        origin: Origin,
    ) -> None:
        now = self._clock.now()
        seq = self._log.last_seq()
        events: list[LogEntry] = []
        lines: list[bytes] = []  # each object encoded once (when staged), reused below
        for change, carrier in changes:
            seq += 1
            # The kind was checked when the change was accepted; the object matches it.
            entry: Any = ENTRY_FOR_KIND[change.kind]
            event = entry(
                seq=seq,
                type=change.type,
                at=now,
                trace=carrier,
                origin=change.origin or origin,
                object=change.object,
            )
            events.append(event)
            lines.append(entry_line(event, change.encoded))
        messages = [
            Message(
                topology.ERRORS.name,
                topology.error_key(r.object_kind),
                _encoder.encode(redact_report(r)),
            )
            for r in reports
        ]
        try:
            await self.leadership.append(events, lines)
        except LogWriteError as error:
            self._log_refused(events, error)
            raise
        # The log is the commit point: the view takes the batch now, so a redelivery
        # after a failure below is a duplicate and never recorded twice. What the store
        # or the bus missed is repaired from the log by catch-up (here, or on the gap
        # the next apply finds).
        self._objects.commit(staged)
        self._catch_up_due = True  # until the store and the bus have the batch
        try:
            if events:
                await self._store.apply(
                    [projected(e, c.encoded) for e, (c, _) in zip(events, changes, strict=True)]
                )
                if self._known is not None:
                    self._known = dataclasses.replace(self._known, seq=events[-1].seq)
                messages.append(cluster_message(events, lines))
            if messages:
                await self._bus.publish(messages)
        except Deposed as error:  # nothing acknowledged or repaired: for the leader
            self.leadership.depose(error)
            raise
        except Exception:
            log.exception("commit of %d events failed; recovering from the log", len(events))
            await self._catch_up()  # if it fails too, it stays due (see _catch_up_due)
            raise
        self._catch_up_due = False


def _stage_bindings(
    staged: Staged,
    delivery: Delivery,
    changes: _Changes,
    reports: list[ErrorReport],
) -> None:
    """The Bindings a binder published: each binds its pod, or is reported."""
    try:
        bound = _bound(delivery)
    except msgspec.DecodeError as error:
        reports.append(_binding_report(None, "", f"malformed Binding: {error}"))
        return
    for binding, carrier in bound:
        change, problem = _bind(staged, binding)
        if problem is not None:
            reports.append(problem)
        if change is not None:
            changes.append((change, carrier))


def _bound(delivery: Delivery) -> list[tuple[Binding, dict[str, str]]]:
    """The Bindings a delivery carries, each with its trace carrier: a BoundBatch from
    the binder, or one Binding (queued by a ksched that sent the users' copy here).
    Raises DecodeError when it is neither."""
    decoded = _bound_decoder.decode(delivery.body)  # by its kind
    if isinstance(decoded, Binding):
        return [(decoded, dict(delivery.headers))]
    return [(b.binding, b.trace) for b in decoded.bindings]


def _bind(staged: Staged, binding: Binding) -> tuple[Change | None, ErrorReport | None]:
    key = object_key("pod", binding.metadata)
    pod = staged.get("pod", key)
    target = binding.target.name
    if not isinstance(pod, Pod) or (
        binding.metadata.uid and binding.metadata.uid != pod.metadata.uid
    ):
        return None, None  # the pod was deleted (or replaced) while it was being bound
    if pod.spec.node_name == target:
        return None, None
    if pod.spec.node_name:
        return None, _binding_report(
            binding, "target.name", f"pod is already bound to node {pod.spec.node_name}"
        )
    if not staged.has_node(target):
        return None, _binding_report(binding, "target.name", f"node {target!r} not found")
    bound = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=target))
    return staged.reconcile("pod", key, "MODIFIED", bound), None


def _check_references(staged: Staged, accepted: Accepted) -> ErrorReport | None:
    obj = accepted.object
    owner = staged.uid_owner(obj.metadata.uid)
    if accepted.type != "DELETED" and owner not in (None, (accepted.kind, accepted.key)):
        # The API server guarantees unique uids: a second object with one is refused.
        other_kind, other_key = owner
        return ErrorReport(
            object_kind=accepted.kind,
            namespace=obj.metadata.namespace,
            name=obj.metadata.name,
            field="metadata.uid",
            reason=f"uid {obj.metadata.uid!r} is already used by {other_kind} {other_key}",
        )
    if (
        isinstance(obj, Pod)
        and accepted.type != "DELETED"
        and obj.spec.node_name
        and not staged.has_node(obj.spec.node_name)
    ):
        return ErrorReport(
            object_kind="pod",
            namespace=obj.metadata.namespace,
            name=obj.metadata.name,
            field="spec.nodeName",
            reason=f"node {obj.spec.node_name!r} not found",
        )
    return None


def _internal_report(delivery: Delivery, error: Exception) -> ErrorReport:
    """A message whose validation raised: refused alone, with what went wrong."""
    kind = delivery.routing_key.partition(".")[0].lower() or "unknown"
    return ErrorReport(
        object_kind=kind,
        field="",
        reason=f"could not be validated ({type(error).__name__}: {error})"[:500],
        routing_key=delivery.routing_key,
        excerpt=delivery.body[:200].decode("utf-8", "replace"),
    )


def _binding_report(binding: Binding | None, field: str, reason: str) -> ErrorReport:
    meta = binding.metadata if binding is not None else None
    return ErrorReport(
        object_kind="binding",
        namespace=meta.namespace if meta else None,
        name=meta.name if meta else None,
        field=field,
        reason=reason,
    )
