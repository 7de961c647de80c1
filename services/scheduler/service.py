"""The scheduler service: one replica's snapshot and scheduling cycle on the bus.

Start-up (no cluster event may be lost between the store read and the feed)::

    consume own feed (buffer) ─▶ read store: applied_seq S, nodes, pods, assumptions
        ─▶ snapshot = store as of ≥ S ─▶ apply buffered entries with seq > S ─▶ live
        ─▶ consume ksched.schedule

The feed is followed by a :class:`~services.common.projection.LogProjection` (buffering
while loading, seq order, duplicates skipped, a gap reloads from the store): the store
applies an entry before the informer publishes it, so every entry after S reaches the
feed, which was bound before S was read.

A ScheduleBatch is served once the snapshot has applied every request's ``seq`` (or
after ``catch_up_timeout``, failing the requests still ahead with ``error``). Its
BindBatch, FailedScheduling Events and ResultBatch go out in one confirmed publish.

A store that lost its projection (StoreLost from an assume or a read, see
:mod:`services.common.store.base`) is never decided on: the requests of the batch fail
with ``error`` (no FailedScheduling Event; the queue retries them with a new attempt),
and the snapshot is reloaded once the informer has rebuilt the store (the reservations
it held locally went with the store).

Nominated pods: next to the snapshot (pods on nodes) the service keeps the pending
pods of the same feed (scheduler.nominated.PendingPods). Each ScheduleBatch reads the
store's nominations once and runs the framework's two-pass filter with the nominated
pods that are still pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

import msgspec

from contracts import topology
from contracts.events import ClusterBatch, LogEntry, PodEntry
from contracts.k8s import ObjectMeta, Pod, PodCondition, PodSpec, PodStatus
from contracts.messages import (
    BindBatch,
    ResultBatch,
    ScheduleBatch,
    ScheduleRequest,
    attempt_result,
)
from contracts.preemption import PodRef, Preemption, PreemptionVictim
from services.common import gctune, telemetry
from services.common.bus import Bus, Consumer, Message, Received
from services.common.clock import Clock
from services.common.decisions import (
    ATTEMPT_HEADER,
    EXPLAIN_ANNOTATION,
    claim_message,
    decision_message,
    pod_event,
    rfc3339,
    waiting_message,
)
from services.common.metrics import MetricsEndpoint, close_endpoint, serve_metrics
from services.common.projection import LogProjection
from services.common.settings import SchedulerSettings
from services.common.store import ClusterStore, Epoch, Nomination, StoreLost
from services.framework.api.diagnosis import truncate_message
from services.framework.api.listers import KINDS as LISTED_KINDS
from services.framework.api.preemption import (
    DISRUPTION_TARGET,
    PREEMPTED_REASON,
    PREEMPTING_ACTION,
    PREEMPTION_BY_SCHEDULER,
    disruption_message,
    preempted_message,
)
from services.framework.api.registry import Registry
from services.framework.api.warmup import WarmUp
from services.framework.cache.cache import Cache
from services.framework.config import Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.framework.runtime.waiting_pods import SharedWaitingPods
from services.scheduler.cycle import BatchScheduler
from services.scheduler.groups import GroupPods
from services.scheduler.metrics import SchedulerMetrics
from services.scheduler.nominated import PendingPods, hold_assumptions, nominated_pods
from services.scheduler.outcome import BatchOutcome, Failure, Preempted

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

log = logging.getLogger("ksched.scheduler")

CACHE_METRICS_PERIOD = 1.0
"""Seconds between refreshes of ``scheduler_cache_size`` on the service's clock, as
upstream's cache refreshes it every ``cleanAssumedPeriod`` (1 s), whether or not any
pod is being scheduled: an idle replica reports its assumed pods going to 0 as their
Bindings arrive."""


class SchedulerService:
    def __init__(
        self,
        bus: Bus,
        store: ClusterStore,
        clock: Clock,
        profiles: Sequence[Profile] | None = None,
        *,
        settings: SchedulerSettings,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        metrics_port: int | None = None,
    ) -> None:
        """``profiles``: validated profiles (``load_profiles``); None runs the default
        profile. ``settings``: this replica's group (its name, the tie-break seed, the
        reservation TTL, conflict retries, the catch-up timeout, explain), with a
        non-empty ``replica``. ``tracer``: defaults to the process's
        (telemetry.tracer). ``metrics_port``: serve ``/metrics`` there (0: any free
        port; None: none)."""
        if not settings.replica:
            raise ValueError("scheduler settings: replica: must not be empty")
        self._bus, self._store, self._clock = bus, store, clock
        self.metrics = SchedulerMetrics()
        self._metrics_port = metrics_port
        self.endpoint: MetricsEndpoint | None = None
        self._replica = settings.replica
        rng = random.Random(settings.seed)
        # The extension points' spans only when they go somewhere (asked per pod, as
        # the other services ask): eight no-op spans per pod cost the cycle
        # about a tenth of its time. A tracer handed over always makes them.
        traced = None if tracer is not None else telemetry.tracing
        tracer = tracer or telemetry.tracer("scheduler")
        self.cache = Cache()
        self.waiting = SharedWaitingPods(store, clock)
        """The pods waiting at Permit, shared with every replica through the store."""
        self.pending = PendingPods()
        self.groups = GroupPods(
            self.cache.assumed_node, lambda: self._cycle.permitting, self._waiting_node
        )
        """The pods of each pod group (Coscheduling's pod lister)."""
        """Pending pods by uid: what a nominated pod looks like (see scheduler.nominated)."""
        self.frameworks = {
            p.scheduler_name: Framework(
                p,
                registry if registry is not None else in_tree_registry(),
                rng=rng,
                tracer=tracer,
                traced=traced,
                path=f"profiles[{i}]",
                listers=self.cache.listers,
                waiting_pods=self.waiting,
                pods=self.groups,
                now=clock.now,
            )
            for i, p in enumerate(profiles or (default_profile(),))
        }
        for framework in self.frameworks.values():
            framework.recorder = self.metrics
        # Found once: an isinstance against a Protocol costs microseconds, per plugin.
        self._warmers = [
            plugin
            for framework in self.frameworks.values()
            for plugin in framework.plugins.values()
            if isinstance(plugin, WarmUp)
        ]
        self._cycle = BatchScheduler(
            self.cache,
            self.frameworks,
            store,
            clock,
            pending=self.pending,
            assume_ttl=settings.assume_ttl,
            max_conflict_retries=settings.max_conflict_retries,
            tracer=tracer,
            explain=settings.explain,
            waiting=self.waiting,
            catch_up=self._caught_up,
        )
        self._catch_up_timeout = settings.catch_up_timeout
        self._forgotten = 0
        """The queue's ScheduleBatch.forgotten when this replica last looked."""
        self._encoder = msgspec.json.Encoder()
        self._projection = LogProjection(store, clock, log, load=self._load, apply=self._apply)
        """The cluster feed, applied to the snapshot and the pending pods."""
        self._consumers: list[Consumer] = []
        self._refresher: asyncio.Task[None] | None = None
        """Refreshes ``scheduler_cache_size`` (:meth:`_refresh_cache_metrics`)."""

    async def _caught_up(self, seq: int) -> bool:
        return await self._projection.wait_for(seq, within=self._catch_up_timeout)

    def _waiting_node(self, uid: str) -> str | None:
        waiting = self.waiting.get_waiting_pod(uid)
        return waiting.node if waiting is not None else None

    async def start(self) -> None:
        feed = topology.scheduler_cluster_queue(self._replica)
        await self._bus.declare([feed, topology.SCHEDULER_REQUESTS])
        # Each message is a ClusterBatch (up to hundreds of entries): a small batch keeps
        # the prefetched backlog, and so this process's memory, small during a burst.
        self._consumers.append(
            await self._bus.consume(feed, self._on_cluster, decode=ClusterBatch, max_batch=32)
        )
        await self._projection.reload()
        self._consumers.append(
            await self._bus.consume(
                topology.SCHEDULER_REQUESTS, self._on_requests, decode=ScheduleBatch
            )
        )
        self.endpoint = serve_metrics(self.metrics.registry, self._metrics_port)
        self.update_cache_metrics()
        self._refresher = asyncio.create_task(self._refresh_cache_metrics())

    async def stop(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
            self._refresher = None
        while self._consumers:
            await self._consumers.pop().cancel()
        close_endpoint(self.endpoint)
        self.endpoint = None

    async def _load(self, epoch: Epoch, lost: StoreLost | None) -> None:
        """Replace the snapshot and the pending pods with the store's objects (as of
        ``epoch.seq`` or later) and assume again the store's assumptions of pods not
        bound (the local ones went with the snapshot, or with the lost store)."""
        versions = await self._store.domain_versions()  # before what they count
        releases = await self._store.release_version()  # and before the assumptions
        nodes = await self._store.objects("node")
        pods = await self._store.objects("pod")
        others = {kind: await self._store.objects(kind) for kind in LISTED_KINDS}
        assumed = await self._store.assumed()
        by_uid = self.cache.load(nodes, pods, epoch.seq, others)
        self.pending.load(by_uid.values())
        self.groups.load(by_uid.values())
        self._cycle.versions.load(versions, by_uid.values())
        hold_assumptions(self.cache, self.pending, assumed)
        self._cycle.releases = releases
        self._warm_up(others)
        gctune.settle()
        log.info("snapshot loaded at seq %d: %d nodes", epoch.seq, self.cache.num_nodes)

    def _apply(self, events: Sequence[LogEntry]) -> None:
        self._cycle.versions.watch(
            e.object for e in events if isinstance(e, PodEntry) and e.type != "DELETED"
        )
        self.pending.apply(events)
        self.groups.apply(events)
        self.cache.apply(events)
        self._warm_up({str(e.__struct_config__.tag) for e in events})

    def _warm_up(self, kinds: Collection[str]) -> None:
        """The plugins that precompute (``WarmUp``) do so once objects of ``kinds``
        changed, rather than on the next pod."""
        for plugin in self._warmers:
            if not plugin.warm_kinds.isdisjoint(kinds):
                plugin.warm_up()

    async def _on_cluster(self, batches: Sequence[Received[ClusterBatch]]) -> None:
        await self._projection.feed([event for batch in batches for event in batch.value.events])

    async def _on_requests(self, batches: Sequence[Received[ScheduleBatch]]) -> None:
        requests = [request for batch in batches for request in batch.value.requests]
        if not requests:
            return
        began = time.perf_counter()
        await self._projection.wait_for(max(r.seq for r in requests), within=self._catch_up_timeout)
        applied = self._projection.applied_seq
        ready = [r for r in requests if r.seq <= applied]
        try:
            forgotten = max(batch.value.forgotten for batch in batches)
            await self._cycle.expire(self._clock.now(), forgotten=forgotten != self._forgotten)
            self._forgotten = forgotten
            nominated = None
            nominations: dict[str, Nomination] = {}
            if ready:
                nominations = await self._store.nominations()
                nominated = nominated_pods(nominations, self.pending, self.cache)
            outcome = await self._cycle.run(ready, nominated, nominations)
        except StoreLost as lost:
            await self._bus.publish(self._messages(_lost(requests, lost)))
            await self._projection.reload(lost)
            return
        for request in requests:
            if request.seq > applied:
                reason = (
                    f"the scheduler's snapshot is behind (applied seq {applied} < {request.seq})"
                )
                outcome.failures.append(
                    Failure(request, attempt_result(request, "error", reason), False)
                )
        self._measure(outcome, time.perf_counter() - began)
        messages = self._messages(outcome)
        if messages:
            await self._bus.publish(messages)

    async def observe(self) -> None:
        """Periodic measurements (run_service's watchdog): the projection's lag."""
        lag = await self._store.applied_seq() - self._projection.applied_seq
        self.metrics.projection_lag.labels("scheduler").set(max(lag, 0))

    def _measure(self, outcome: BatchOutcome, seconds: float) -> None:
        m = self.metrics
        for failure in outcome.failures:
            result = failure.result.outcome
            if result in ("unschedulable", "error"):
                profile = failure.request.profile
                m.attempts.labels(result, profile).inc()
                m.attempt_duration.labels(result, profile).observe(seconds)
        for elapsed in outcome.algorithm:
            m.algorithm.observe(elapsed)
        if outcome.algorithm_cpu:
            m.cycle_cpu.inc(outcome.algorithm_cpu)
        if outcome.assume_conflicts:
            m.assume_conflicts.inc(outcome.assume_conflicts)
        if outcome.domain_conflicts:
            m.domain_conflicts.inc(outcome.domain_conflicts)
        if outcome.release_conflicts:
            m.release_conflicts.inc(outcome.release_conflicts)
        self.update_cache_metrics()
        if outcome.preemption_attempts:
            self.metrics.preemption_attempts.inc(outcome.preemption_attempts)
        if outcome.nomination_conflicts:
            self.metrics.nomination_conflicts.inc(outcome.nomination_conflicts)
        for preempted in outcome.preemptions:
            self.metrics.preemption_victims.observe(len(preempted.result.victims))

    def update_cache_metrics(self) -> None:
        """``scheduler_cache_size`` from the cache as it is now (upstream's
        ``updateMetrics``): after each batch, and every :data:`CACHE_METRICS_PERIOD`
        seconds, so assumed pods that got bound since are no longer counted."""
        m, cache = self.metrics, self.cache
        m.cache_size.labels("nodes").set(cache.num_nodes)
        m.cache_size.labels("pods").set(cache.num_pods)
        m.cache_size.labels("assumed_pods").set(cache.num_assumed)

    async def _refresh_cache_metrics(self) -> None:
        while True:
            await self._clock.sleep(CACHE_METRICS_PERIOD)
            self.update_cache_metrics()

    def _messages(self, outcome: BatchOutcome) -> list[Message]:
        encode = self._encoder.encode
        messages: list[Message] = []
        if outcome.binds:
            body = encode(BindBatch(requests=outcome.binds))
            traces = [request.trace for request in outcome.binds]
            messages.append(Message(topology.BIND.name, topology.BIND_KEY, body, traces=traces))
        for decided in outcome.claims:
            headers = {ATTEMPT_HEADER: str(decided.request.attempt), **decided.request.trace}
            messages.append(claim_message(decided.claim, encode(decided.claim), headers))
        now = self._clock.now()
        for failure in outcome.failures:
            if not failure.event or failure.pod is None:
                continue
            request = failure.request
            event = pod_event(
                failure.pod,
                reason="FailedScheduling",
                message=truncate_message(failure.result.message),
                warning=True,
                action="Scheduling",
                attempt=request.attempt,
                now=now,
                scheduler_name=request.profile,
                annotations=(
                    {EXPLAIN_ANNOTATION: failure.explanation} if failure.explanation else None
                ),
            )
            headers = {ATTEMPT_HEADER: str(request.attempt), **request.trace}
            messages.append(decision_message(event, encode(event), headers))
        for waiting in outcome.waiting:
            messages.append(waiting_message(waiting, encode(waiting), {}))
        for preempted in outcome.preemptions:
            messages.extend(preemption_messages(preempted, now, encode))
        results = [f.result for f in outcome.failures] + outcome.waiting_results
        if results:
            body = encode(ResultBatch(results=results))
            messages.append(Message(topology.RESULTS.name, topology.RESULTS_KEY, body))
        return messages


def preemption_messages(
    preempted: Preempted, now: float, encode: Callable[[object], bytes]
) -> list[Message]:
    """What kube-scheduler's preemption writes, as decisions: the Preemption (victims
    with their DisruptionTarget condition), the preemptor's nomination and the cleared
    ones (``nomination.<ns>``), and a ``Preempted`` Event on each victim."""
    request, preemptor, result = preempted.request, preempted.preemptor, preempted.result
    node = result.nominated_node_name or ""
    headers = {ATTEMPT_HEADER: str(request.attempt), **request.trace}
    condition = PodCondition(
        type=DISRUPTION_TARGET,
        status="True",
        reason=PREEMPTION_BY_SCHEDULER,
        message=disruption_message(request.profile),
        last_transition_time=rfc3339(now),
    )
    decision = Preemption(
        preemptor=_ref(preemptor.pod),
        nominated_node=node,
        victims=[
            PreemptionVictim(**msgspec.structs.asdict(_ref(v.pod)), condition=condition)
            for v in result.victims
        ],
        scheduler_name=request.profile,
        attempt=request.attempt,
    )
    namespace = preemptor.pod.metadata.namespace
    messages = [
        Message(
            topology.DECISIONS.name,
            topology.decision_key("preemption", namespace),
            encode(decision),
            headers,
        ),
        nomination_message(preemptor.pod, node, encode, headers),
    ]
    messages += [nomination_message(p.pod, "", encode, headers) for p in result.cleared_nominations]
    for victim in result.victims:
        event = pod_event(
            victim.pod,
            reason=PREEMPTED_REASON,
            message=preempted_message(preemptor.uid, node),
            warning=False,
            action=PREEMPTING_ACTION,
            attempt=request.attempt,
            now=now,
            scheduler_name=request.profile,
        )
        messages.append(decision_message(event, encode(event), headers))
    return messages


def nomination_message(
    pod: Pod, node: str, encode: Callable[[object], bytes], headers: dict[str, str]
) -> Message:
    """``nomination.<ns>``: the pod's status update with ``nominatedNodeName``."""
    meta = pod.metadata
    update = Pod(
        metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=meta.uid),
        spec=PodSpec(),
        status=PodStatus(nominated_node_name=node),
    )
    key = topology.decision_key("nomination", meta.namespace)
    return Message(topology.DECISIONS.name, key, encode(update), headers)


def _ref(pod: Pod) -> PodRef:
    meta = pod.metadata
    return PodRef(namespace=meta.namespace or "default", name=meta.name, uid=meta.uid or "")


def _lost(requests: Sequence[ScheduleRequest], lost: StoreLost) -> BatchOutcome:
    """Every request of a batch the store refused: ``error``, retried by the queue."""
    reason = f"the cluster store was lost and is being rebuilt ({lost})"
    outcome = BatchOutcome()
    outcome.failures.extend(
        Failure(request, attempt_result(request, "error", reason), False) for request in requests
    )
    return outcome
