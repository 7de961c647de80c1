"""The scheduling cycle for a batch of requests: algorithm, local assume, one store assume.

A request names its pod by uid: the pod is the one this replica's projection of
pending pods (:class:`PendingPods`, as of the request's ``seq`` or later) holds, with its
PodInfo computed once per pod version; a pod no longer pending there (bound, deleted,
finished) ends the attempt ``stale``.

For each request, in order: run the profile's framework against the cache; a pod
that fits is assumed in the cache and reserved by the Reserve plugins at once (so the
next pod of the batch sees both) and gets a store :class:`Reservation` that re-checks
only what the profile filters on (``Framework.checked_resources``). Then one
``store.assume`` call reserves the whole batch atomically per pod:

- ``assumed``: the pod goes to the binder (a BindRequest, with VolumeBinding's decisions).
- ``conflict``: another replica got there first. The local assumption and the
  reservation are undone, the node's view is corrected with the store's usage, and
  the pod is scheduled again
  (at most ``max_conflict_retries`` times, then the attempt ends with ``error``).
  The reservation also carries what the decision read (scheduler.domains): when
  another replica placed a pod in one of those domains since, the store refuses it;
  the cache is brought up to what the store holds (its log position and every
  replica's assumptions) before the pod is scheduled again.
  A reservation takes the DRA devices the pod's Reserve allocated
  (``CycleState.reserved_devices``): when the store says others hold some, the cache
  counts them as held elsewhere for the assume TTL (``Cache.devices_held_elsewhere``,
  which DynamicResources reads) before the pod is scheduled again.
- ``stale``: the attempt is no longer the pod's lease; the local assumption and the
  reservation are undone.

Pods that fit nowhere end ``unschedulable`` with upstream's FitError message. Pods the
store assumed then go through Permit (a waiting pod's record is written to the store at
the end of the batch, scheduler.waiting). The waiting pods a failed pod's PostFilter
rejected (Coscheduling giving its pod group up) are rejected there only if no other
such release came since this replica's view; else the pod is scheduled again on the
store's view as it is now (scheduler.releases).

A batch runs in rounds until no attempt is left to retry, each in four named steps:
``_schedule`` (the algorithm, the local assume and Reserve, pod by pod), ``_assume``
(the one store call), ``_answered`` (the store's answers sorted: on to Permit, again,
or done) and ``_permit_all``. What the steps share about the batch (its outcome, its
start, the nominations it filters with) is handed to them in a ``Batch``
(scheduler.attempts, with each request's ``Attempt``); the scheduler object keeps only
what outlives a batch, and ``permitting``, which the pod groups (Coscheduling) read
while Permit runs.

``nominated`` (the pods nominated to each node, see scheduler.nominated) makes every
pod of the batch pass upstream's two-pass filter: a node must fit the pod both with
and without the nominated pods of equal or higher priority.

A pod annotated ``ksched.io/explain: "true"`` (or every pod, with ``explain=True``) is
scheduled with an explanation, which goes with its BindRequest (``explanation``, which
the binder puts on the Binding) or its FailedScheduling Event.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from opentelemetry import trace

from contracts.messages import (
    AttemptResult,
    Outcome,
    ScheduleRequest,
    attempt_result,
)
from services.common import telemetry
from services.common.clock import Clock
from services.common.decisions import explain_requested
from services.common.resources import ResourceError
from services.common.store import (
    AssumeResult,
    BindClaim,
    ClusterStore,
    Nomination,
    Reservation,
    WaitingRecord,
)
from services.framework.api.interface import CycleState, ExtensionPoint
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.runtime import waiting_pods
from services.framework.runtime.filtering import NominatedPods
from services.framework.runtime.framework import Framework, rejection_message
from services.framework.runtime.instrument import Timed
from services.framework.runtime.result import ScheduleResult
from services.scheduler.attempts import Answered, Attempt, Batch, reserved
from services.scheduler.domains import PlacementVersions, anti_affinity_keys
from services.scheduler.nominated import (
    BatchNominations,
    PendingPods,
    claim_nominations,
    hold_assumptions,
    nominated_pods,
    with_nomination,
)
from services.scheduler.outcome import (
    BatchOutcome,
    Failure,
    Preempted,
    charged_requests,
    claim_decisions,
    explained,
    explanation_json,
    resumed,
)
from services.scheduler.releases import overtaken, take_refused
from services.scheduler.waiting import flush_waiting

PREEMPTION = "DefaultPreemption"
EXPIRY_GRACE = 5.0
"""Seconds a replica keeps an assumption past its deadline before it asks the store
whether it is gone: a binder's claim (``begin_bind``, refused past the deadline) reads
the binder's clock a little before the store runs it, and the processes' clocks may
differ by as much."""


class BatchScheduler:
    def __init__(
        self,
        cache: Cache,
        frameworks: Mapping[str, Framework],
        store: ClusterStore,
        clock: Clock,
        *,
        pending: PendingPods,
        assume_ttl: float,
        max_conflict_retries: int,
        tracer: trace.Tracer | None = None,
        explain: bool = False,
        waiting: waiting_pods.SharedWaitingPods | None = None,
        catch_up: Callable[[int], Awaitable[bool]] | None = None,
    ) -> None:
        """``pending``: the pending pods the requests name (fed by the caller from the
        same log as ``cache``). ``explain``: explain every decision, not only those
        of pods that ask. ``waiting``: the waiting pods the frameworks' Handles share
        (required when a profile has Permit plugins). ``catch_up``: wait until the cache
        has applied the given log seq (False: it did not in time); None: it always has."""
        self._cache = cache
        self._pending = pending
        self._frameworks = frameworks
        self._store = store
        self._clock = clock
        self._ttl = assume_ttl
        self._max_retries = max_conflict_retries
        self._tracer = tracer or telemetry.tracer("scheduler")
        self._explain = explain
        self._waiting = waiting
        self._catch_up = catch_up
        self.versions = PlacementVersions()
        """The placement versions this replica's cache reflects (the caller loads
        them with the cache and feeds it the pods it sees)."""
        self._permits = any(f.plugin_names(ExtensionPoint.Permit) for f in frameworks.values())
        self.releases: int | None = None
        """The store's release version this cache's view of the others' reservations
        counts (scheduler.releases; None: unknown, so the first release is refused)."""
        self.permitting: set[str] = set()
        """While a round's Permit runs, the pods it assumed that are not through Permit
        yet (empty otherwise): a Permit plugin counting the pods on nodes
        (Coscheduling, through the service's GroupPods) does not see them yet, as
        upstream's sequential cycle would not."""

    async def run(
        self,
        requests: Sequence[ScheduleRequest],
        nominated: NominatedPods | None = None,
        nominations: Mapping[str, Nomination] | None = None,
    ) -> BatchOutcome:
        """Schedule every request; the caller publishes the outcome. ``nominated``: the
        pods nominated to each node (None: no nominations); ``nominations``: the
        store's, so a preemptor whose pod does not show its nomination yet is scheduled
        as if it did (upstream's API update would have)."""
        batch_nominations = BatchNominations.of(nominations or {}, nominated)
        batch = Batch(BatchOutcome(), self._clock.now(), batch_nominations)
        if self._permits and self._waiting is not None:
            await self._waiting.refresh()
        await self._schedule_all(requests, batch)
        await self._claim_all(batch)
        if self._waiting is not None and (self._waiting.dirty or batch.outcome.waiting):
            await self._flush(self._waiting, batch)
        return batch.outcome

    async def _claim_all(self, batch: Batch) -> None:
        """Claim the batch's new nominations; the preemptors another replica's
        nomination beat are scheduled again (at most ``max_conflict_retries`` times)."""
        outcome, retries = batch.outcome, 0
        while lost := await claim_nominations(self._store, outcome, batch.claimed):
            batch.claimed = len(outcome.preemptions)
            if retries == self._max_retries:
                for preempted in lost:
                    node = preempted.result.nominated_node_name
                    reason = f'node "{node}" was nominated to another pod meanwhile'
                    result = attempt_result(preempted.request, "error", reason)
                    outcome.failures.append(
                        Failure(preempted.request, result, True, pod=preempted.preemptor.pod)
                    )
                break
            retries += 1
            # Another replica's preemption took the room: schedule them again with
            # the store's nominations as they are now.
            store = await self._store.nominations()
            fresh = nominated_pods(store, self._pending, self._cache)
            batch.nominations = BatchNominations.of(store, fresh)
            await self._schedule_all([p.request for p in lost], batch)
        batch.claimed = len(outcome.preemptions)

    async def _flush(self, waiting: waiting_pods.SharedWaitingPods, batch: Batch) -> None:
        """Flush the waiting pods; the pods whose PostFilter rejections the store
        refused (another release came since this view: scheduler.releases) are
        scheduled again on the store's view as it is now, at most
        ``max_conflict_retries`` times."""
        outcome = batch.outcome
        resolved: list[WaitingRecord] = []
        for retry in itertools.count():
            flushed = await flush_waiting(
                waiting, self._store, self._clock, outcome, self._cache.forget
            )
            resolved += flushed.resolved
            if flushed.released is not None:
                self.releases = flushed.released
            if not (refused := take_refused(outcome, flushed.refused)):
                break
            outcome.release_conflicts += len(refused)
            if retry == self._max_retries:
                overtaken(outcome, refused, retry + 1)
                break
            await self._refresh({})
            await waiting.refresh()
            await self._schedule_all([f.request for f in refused], batch)
            await self._claim_all(batch)
        outcome.binds.extend(resumed(resolved))  # the binder takes each from the store

    async def _schedule_all(self, requests: Sequence[ScheduleRequest], batch: Batch) -> None:
        """Schedule ``requests`` in rounds, until no attempt is left to retry."""
        begun = (self._begin(request, batch) for request in requests)
        pending = [attempt for attempt in begun if attempt is not None]
        while pending:
            pending = await self._round(pending, batch)

    def _begin(self, request: ScheduleRequest, batch: Batch) -> Attempt | None:
        outcome = batch.outcome
        uid = request.uid
        pod = self._pending.pod(uid)
        framework = self._frameworks.get(request.profile)
        if framework is None:
            reason = f'no profile "{request.profile}" in this scheduler'
            result = attempt_result(request, "error", reason)
            outcome.failures.append(Failure(request, result, True, pod=pod))
            return None
        if pod is None or self._cache.is_bound(uid):
            outcome.failures.append(Failure(request, attempt_result(request, "stale"), False))
            return None
        try:  # PodInfo once per pod version; None when its requests are invalid
            info = self._pending.info(uid) or PodInfo.of(pod)
            nomination = batch.nominations.store.get(uid)
            if nomination is not None and not pod.status.nominated_node_name:
                info = PodInfo.of(with_nomination(pod, nomination.node))
        except ResourceError as err:
            result = attempt_result(request, "error", str(err))
            outcome.failures.append(Failure(request, result, True, pod=pod))
            return None
        span = self._tracer.start_span(
            "scheduling_cycle",
            context=telemetry.extract(request.trace),
            kind=trace.SpanKind.INTERNAL,
            links=telemetry.ambient_links(),
            attributes={
                "ksched.pod": info.key,
                "ksched.attempt": request.attempt,
                "ksched.profile": request.profile,
            },
        )
        explain = self._explain or explain_requested(pod)
        return Attempt(request, framework, info, span, explain=explain)

    async def _round(self, pending: list[Attempt], batch: Batch) -> list[Attempt]:
        """One round: the algorithm for each attempt with its local assume and Reserve,
        one store assume for those reserved, then Permit for those the store assumed.
        Returns the attempts to schedule again (conflicts, and those deferred)."""
        reserving, deferred = self._schedule(pending, batch)
        if not reserving:
            return deferred
        answers = await self._assume(reserving)
        answered = self._answered(reserving, answers, batch.outcome)
        if answered.moved:
            await self._refresh(answered.moved)
        await self._permit_all(answered.assumed, batch)
        return answered.retry + deferred

    def _schedule(
        self, pending: list[Attempt], batch: Batch
    ) -> tuple[list[Attempt], list[Attempt]]:
        """Each attempt in order: the algorithm; a pod that fits is assumed in the cache
        and reserved by the Reserve plugins at once, so the next one sees it. Returns
        the reserved attempts and those deferred to the next round."""
        reserving: list[Attempt] = []
        for index, attempt in enumerate(pending):
            # With Permit plugins, a pod that fits nowhere while pods ahead of it in the
            # round are not through Permit yet waits for the next round: its PostFilter
            # must see them waiting, as upstream's one-pod-at-a-time cycle would.
            later = self._permits and bool(reserving)
            mark = self._waiting.mark() if self._waiting is not None else 0
            result = self._algorithm(attempt, batch, post_filter=not later)
            if result.node is None and later:
                return reserving, pending[index:]
            if result.node is None:
                self._fail(attempt, result, batch)
                chosen = result.post_filter
                if self._waiting is not None and not (chosen and chosen.nominated_node_name):
                    self._waiting.on_view(mark, attempt.pod.uid, self.releases)
                continue
            attempt.node = result.node
            deadline = self._clock.now() + self._ttl
            self._cache.assume(attempt.pod, result.node, deadline)
            if self._reserve(attempt, batch.outcome):
                reserving.append(attempt)
        return reserving, []

    def _algorithm(self, attempt: Attempt, batch: Batch, *, post_filter: bool) -> ScheduleResult:
        """``Framework.schedule_pod`` in a fresh cycle state (the scheduling algorithm's
        duration goes to the outcome, the explanation to the attempt)."""
        self._cache.forget(attempt.pod.uid)  # a redelivered or retried attempt
        attempt.state = CycleState()
        with trace.use_span(attempt.span, end_on_exit=False):
            began, cpu = time.perf_counter(), time.thread_time()
            result = attempt.framework.schedule_pod(
                self._cache,
                attempt.pod,
                state=attempt.state,
                nominated=batch.nominations.pods,
                explain=attempt.explain,
                post_filter=post_filter,
            )
            batch.outcome.algorithm.append(time.perf_counter() - began)
            batch.outcome.algorithm_cpu += time.thread_time() - cpu
        attempt.explanation = explanation_json(result)
        return result

    async def _assume(self, reserving: list[Attempt]) -> list[AssumeResult]:
        """One ``store.assume`` for the round's reservations; if it fails, each is
        undone here (the batch will be redelivered and redone)."""
        reservations = self._reservations(reserving)
        try:
            return await self._store.assume(reservations, self._clock.now())
        except BaseException:
            for attempt in reserving:
                self._undo(attempt)
                attempt.span.end()
            raise

    def _answered(
        self, reserving: list[Attempt], answers: Sequence[AssumeResult], outcome: BatchOutcome
    ) -> Answered:
        """Sort the store's answers: ``assumed`` goes on to Permit; any other answer
        undoes the local assumption and Reserve, then the pod is scheduled again (a
        conflict, at most ``max_conflict_retries`` times) or its attempt ends."""
        answered = Answered()
        for attempt, answer in zip(reserving, answers, strict=True):
            if answer.status == "assumed":
                self.versions.placed(attempt.touches)
                answered.assumed.append(attempt)
                continue
            # A pod scheduled again within its attempt has not failed: Unreserve undoes
            # what Reserve did, but plugins see the retry (CycleState.retrying).
            retrying = answer.status != "stale" and attempt.conflicts < self._max_retries
            attempt.state.retrying = retrying
            self._undo(attempt)
            if answer.keys:  # pods it knew nothing of: read their keys' domains too
                self.versions.watched.update(answer.keys)
            if answer.devices:  # held by others: not to be chosen again for a while
                self._cache.hold_foreign_devices(answer.devices, self._clock.now() + self._ttl)
            if answer.versions or answer.keys:
                outcome.domain_conflicts += 1
                answered.moved.update(answer.versions)
            elif answer.status == "conflict":
                outcome.assume_conflicts += 1
            if answer.status == "stale":
                self._finish(
                    attempt, outcome, attempt_result(attempt.request, "stale"), event=False
                )
            elif attempt.conflicts < self._max_retries:
                attempt.conflicts += 1
                attempt.span.add_event("conflict", {"node": attempt.node, "reason": answer.reason})
                if not (answer.versions or answer.keys):  # a refresh follows a domain conflict
                    self._cache.correct_usage(attempt.node, answer.usage)
                answered.retry.append(attempt)
            else:
                reason = f'node "{attempt.node}" no longer fits the pod: {answer.reason}'.rstrip(
                    ": "
                )
                self._finish(
                    attempt, outcome, attempt_result(attempt.request, "error", reason), event=True
                )
        return answered

    async def _permit_all(self, assumed: list[Attempt], batch: Batch) -> None:
        """Permit for each pod the store assumed, in order (:attr:`permitting` holds
        those not through it yet); the reservations of those it rejects give their
        room back."""
        self.permitting = {a.pod.uid for a in assumed}
        released: list[BindClaim] = []
        for attempt in assumed:
            self._permit(attempt, batch, released)
            self.permitting.discard(attempt.pod.uid)
        if released:  # rejected at Permit: the reservation gives its room back
            await self._store.forget(released)

    def _undo(self, attempt: Attempt) -> None:
        """Unreserve (in reverse order) and forget the local assumption."""
        attempt.framework.run_reserve_plugins_unreserve(attempt.state, attempt.pod, attempt.node)
        self._cache.forget(attempt.pod.uid)

    def _reservations(self, reserving: Sequence[Attempt]) -> list[Reservation]:
        """One reservation per attempt, with the domains its decision read and those
        its placement touches (PlacementVersions.call)."""
        cache = self._cache
        placed = [(a.pod.pod, cache.node(a.node), a.state.first_of_group) for a in reserving]
        domains = self.versions.call(placed, cache.listers)
        watched = frozenset(self.versions.watched)
        reservations = []
        for a, (reads, touches) in zip(reserving, domains, strict=True):
            a.touches = touches or a.touches  # a node the cache lost touches nothing new
            reservations.append(
                Reservation(
                    uid=a.pod.uid,
                    node=a.node,
                    attempt=a.request.attempt,
                    requests=charged_requests(a.pod),
                    ttl=self._ttl,
                    checked=a.framework.checked_resources(a.pod),
                    reads=reads,
                    touches=a.touches,
                    watched=watched,
                    keys=tuple(anti_affinity_keys(a.pod.pod)),
                    devices=tuple(a.state.reserved_devices),
                )
            )
        return reservations

    async def expire(self, now: float, *, forgotten: bool = False) -> None:
        """Forget the assumptions past their deadline (and :data:`EXPIRY_GRACE`) the way
        the store does: one the store holds as binding stays (until its Binding is in
        the log), one it no longer holds or holds past its deadline goes (no binder may
        claim it any more). A deadline alone never removes a pod the placement
        versions count. ``forgotten``: a binding cycle gave an assumption's room back
        since the last batch (ScheduleBatch.forgotten): every assumption the store no
        longer holds goes now, so the pods moved for that room see it."""
        if forgotten or self._cache.has_expired(now - EXPIRY_GRACE):
            await self._refresh({}, now)

    async def _refresh(self, versions: Mapping[str, int], now: float | None = None) -> None:
        """Bring the cache up to what the store holds, then expect ``versions`` (read
        by the store before this): every replica's live assumptions, and the log up to
        the store's applied seq (read after them, so a pod bound in between is in one or
        the other). Assumptions this cache holds that the store no longer does (or
        holds past their deadline and the grace at ``now``, default the clock's) are
        dropped. If the cache cannot catch up in time, nothing changes and nothing
        is expected: the next reservation reading those domains is refused again."""
        held_since = (self._clock.now() if now is None else now) - EXPIRY_GRACE
        releases = await self._store.release_version() if self._permits else None
        stored = await self._store.assumed()
        assumed = {u: a for u, a in stored.items() if a.deadline >= held_since}
        seq = await self._store.applied_seq()
        if self._catch_up is not None and not await self._catch_up(seq):
            return
        self._cache.drop_corrections()  # the store's usage: what it now holds, pod by pod
        for uid in self._cache.assumed_uids() - assumed.keys():
            self._cache.forget(uid)
        hold_assumptions(self._cache, self._pending, assumed)
        self.versions.refreshed(versions)
        self.releases = releases

    def _permit(self, attempt: Attempt, batch: Batch, released: list[BindClaim]) -> None:
        """Permit, after the store reserved the pod (``RunPermitPlugins``): Success binds,
        Wait parks the pod as a waiting pod (the Handle's waiting pods record it), a
        rejection or an error undoes the reservation and ends the attempt."""
        framework, pod, node = attempt.framework, attempt.pod, attempt.node
        if not framework.plugin_names(ExtensionPoint.Permit):
            reserved(attempt, batch, self._waiting)
            return
        with trace.use_span(attempt.span, end_on_exit=False):
            with self._tracer.start_as_current_span("Permit", kind=trace.SpanKind.INTERNAL) as span:
                with Timed(framework.recorder, "Permit", framework.profile_name) as point:
                    status = framework.run_permit_plugins(attempt.state, pod, node)
                    point.status = status.code.name
                span.set_attribute("ksched.status", status.code.name)
        if status.is_success():
            reserved(attempt, batch, self._waiting)
            return
        if status.is_wait():
            reserved(attempt, batch, self._waiting, permit=True)
            return
        self._undo(attempt)
        released.append(BindClaim(pod.uid, node, attempt.request.attempt))
        plugins = [status.plugin] if status.plugin else []
        if status.is_rejected():
            message = rejection_message(pod, node, status)
            result = attempt_result(attempt.request, "unschedulable", message, plugins=plugins)
        else:
            result = attempt_result(attempt.request, "error", status.message(), plugins=plugins)
        self._finish(attempt, batch.outcome, result, event=True)

    def _reserve(self, attempt: Attempt, outcome: BatchOutcome) -> bool:
        """Run the Reserve plugins right after the local assume, before the next pod
        of the batch is scheduled, as upstream's scheduling cycle does: what a plugin
        reserves (VolumeBinding's volumes) is seen by the pods after it. On failure the
        pod is unreserved, forgotten and finished. Returns whether it is reserved."""
        framework, pod, node = attempt.framework, attempt.pod, attempt.node
        with trace.use_span(attempt.span, end_on_exit=False):
            with Timed(framework.recorder, "Reserve", framework.profile_name) as point:
                status = framework.run_reserve_plugins_reserve(attempt.state, pod, node)
                point.status = status.code.name
        if not status.is_success():
            self._undo(attempt)
            outcome_kind: Outcome = "unschedulable" if status.is_rejected() else "error"
            plugins = [status.plugin] if status.plugin else []
            message = (
                rejection_message(pod, node, status) if status.is_rejected() else status.message()
            )
            result = attempt_result(attempt.request, outcome_kind, message, plugins=plugins)
            self._finish(attempt, outcome, result, event=True)
            return False
        return True

    def _fail(self, attempt: Attempt, result: ScheduleResult, batch: Batch) -> None:
        outcome = batch.outcome
        error = result.fit_error
        if error is None and not result.status.is_rejected():
            answer = attempt_result(attempt.request, "error", result.message)
        else:
            unresolvable = error.diagnosis.all_unresolvable if error else True
            if error is not None and PREEMPTION in attempt.framework.plugin_names(
                ExtensionPoint.PostFilter
            ):
                outcome.preemption_attempts += 1
            chosen = result.post_filter
            extra: dict[str, object] = {}
            if chosen is not None and chosen.nominated_node_name is not None:
                extra["nominated_node"] = chosen.nominated_node_name
                extra["cleared_nominations"] = sorted(p.uid for p in chosen.cleared_nominations)
                extra["victims"] = [v.uid for v in chosen.victims]
                if chosen.victims:
                    node = chosen.nominated_node_name or ""
                    seen = batch.nominations.seen(node)
                    outcome.preemptions.append(
                        Preempted(attempt.request, attempt.pod, chosen, seen)
                    )
                    batch.nominations.nominate(node, attempt.pod)
            outcome.claims.extend(claim_decisions(attempt.request, attempt.state))
            answer = attempt_result(
                attempt.request,
                "unschedulable",
                result.message,
                plugins=sorted(result.unschedulable_plugins),
                unresolvable=unresolvable,
                **extra,
            )
        self._finish(attempt, outcome, answer, event=True)

    def _finish(
        self, attempt: Attempt, outcome: BatchOutcome, result: AttemptResult, *, event: bool
    ) -> None:
        attempt.span.set_attribute("ksched.outcome", result.outcome)
        attempt.span.end()
        outcome.failures.append(
            Failure(attempt.request, result, event, explained(attempt), attempt.pod.pod)
        )


__all__ = ["BatchScheduler"]
