"""The binder: the binding cycle of each reserved pod, as upstream's ``bindingCycle``.

Per pod, on its profile's framework (the same profiles as the scheduler's)::

    WaitOnPermit ─▶ PreBind ─▶ Bind ─▶ (Scheduled Event) ─▶ PostBind
         │ any failure after Reserve: Unreserve (reverse order), release the
         └─▶ reservation, the pod back to the queue with upstream's status and message

What a plugin decided in the scheduling cycle and needs here travels in the
BindRequest (``plugin_state``) and is restored into the cycle's CycleState first.
PreBind and Bind plugins do not publish: they leave effects (``CycleState.effects``:
watch events such as VolumeBinding's volume and claim updates, DynamicResources'
ResourceClaims with their allocation on ``claim.<namespace>``, and the Binding
DefaultBinder asks for), which the binder publishes in that order with the
``Scheduled`` Event and the results for the queue, all in one confirmed publish. The
informer records the batch's Bindings from one BoundBatch in that publish (not from the
users' copies, one per pod); a claim's update is the client's to apply (its MODIFIED
watch event), as the API server would have stored it: until then the store counts its
devices as held by the pod.

Waiting at PreBind: a PreBind plugin may ask to wait for the cluster after its PreBind
(DynamicResources, for its devices' binding conditions): the binder publishes the
effects PreBind left (the claims) with the batch at once, records the pod as waiting at
``PreBind`` in the store and goes on with the other pods; its timer tick polls the
plugin and resumes the pod (Bind) or fails it (Unreserve) from any replica
(:mod:`.prebind_wait`).

Claims: before binding, every reservation is claimed in the store (``begin_bind``: it
cannot expire any more). A reservation that expired or was taken over is not bound: the
result is ``error`` and the queue retries the pod after its backoff. If the publish fails
the batch is redelivered; the claim holds, so the same pods are bound (at least once;
the informer ignores a repeated Binding to the same node).

Waiting pods (Permit): the scheduler records a pod that a Permit plugin told to wait in
the store (with one deadline per pending plugin, its reservation already claimed) and
sends nothing to the binder yet. The pod comes here when it is resolved — the last
pending plugin allowed it, or one rejected it — as its BindRequest again (``permit``
set), published by whoever resolved it: a scheduler (Coscheduling allowing its
siblings), this service on a PermitDecision from ``ksched.permit`` (ExternalPermit), or
this service's timers. Every binder replica runs the timers from the deadlines in the
store, so a binder killed while pods wait loses none: another one (or the restarted one)
times them out when their time is up. A resolved record is taken from the store by
exactly one binder (``take_waiting``), so a pod is bound or failed once; a record that
was resolved but never handed on (its resolver died) is picked up after
:data:`RESUME_GRACE`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from opentelemetry.trace import SpanKind

from contracts import topology
from contracts.k8s import ObjectMeta, Pod, PodSpec
from contracts.messages import (
    AttemptResult,
    BindBatch,
    BindRequest,
    BoundBatch,
    BoundPod,
    Outcome,
    ResultBatch,
    attempt_result,
)
from contracts.permit import PermitDecision
from services.binder import prebind_wait
from services.binder.explained import (
    explaining,
    explanation_annotations,
    with_binding_results,
)
from services.binder.metrics import BinderMetrics
from services.binder.permit import error as _error
from services.binder.permit import refusal as _refusal
from services.common import telemetry
from services.common.bus import Bus, Consumer, Message, Received
from services.common.clock import Clock
from services.common.decisions import (
    ATTEMPT_HEADER,
    EXPLAIN_ANNOTATION,
    binding_for,
    claim_message,
    decision_message,
    pod_event,
    pod_status_message,
)
from services.common.metrics import MetricsEndpoint, close_endpoint, serve_metrics
from services.common.store import BindClaim, ClusterStore, StoreLost, WaitingRecord
from services.framework.api.bindwait import BindingWait
from services.framework.api.diagnosis import truncate_message
from services.framework.api.effects import (
    BindEffect,
    ClaimStatusEffect,
    PodStatusEffect,
    WatchEffect,
)
from services.framework.api.interface import CycleState
from services.framework.api.registry import Registry
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.config import Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework, rejection_message
from services.framework.runtime.instrument import Timed
from services.framework.runtime.waiting_pods import SharedWaitingPods, go_duration

log = logging.getLogger("ksched.binder")
tracer = telemetry.tracer("binder")
INTERNAL = SpanKind.INTERNAL

_encoder = msgspec.json.Encoder()
_request_decoder = msgspec.json.Decoder(BindRequest)

POLL: float = 1.0
"""Seconds between looks at the store's waiting pods when none is due sooner (a
scheduler on another replica may have added one with an earlier deadline)."""
RESUME_GRACE: float = 5.0
"""Seconds after which a resolved waiting pod nobody handed on is resumed here."""


class _WatchEvent(msgspec.Struct, frozen=True):
    type: str
    object: object


@dataclass(slots=True)
class _Cycle:
    request: BindRequest
    framework: Framework
    pod: PodInfo
    state: CycleState = field(default_factory=CycleState)
    waited: WaitingRecord | None = None


class BinderService:
    def __init__(
        self,
        bus: Bus,
        store: ClusterStore,
        clock: Clock,
        profiles: Sequence[Profile] | None = None,
        *,
        scheduled_events: bool = True,
        registry: Registry | None = None,
        metrics_port: int | None = None,
    ) -> None:
        """``profiles``: the scheduler's profiles (None: the default profile), whose
        binding-cycle plugins run here. ``scheduled_events``: also publish the
        ``Scheduled`` Event per pod, as kube-scheduler does (one more message per pod).
        ``metrics_port``: serve ``/metrics`` there (0: any free port; None: none)."""
        self._bus = bus
        self._store = store
        self._clock = clock
        self._scheduled_events = scheduled_events
        self.waiting = SharedWaitingPods(store, clock)
        registry = registry if registry is not None else in_tree_registry()
        self.frameworks = {
            p.scheduler_name: Framework(
                p, registry, path=f"profiles[{i}]", waiting_pods=self.waiting, now=clock.now
            )
            for i, p in enumerate(profiles or (default_profile(),))
        }
        self.metrics = BinderMetrics()
        self._metrics_port = metrics_port
        self.endpoint: MetricsEndpoint | None = None
        self._consumers: list[Consumer] = []
        self._timers: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        """One batch at a time touches the shared waiting-pods view and journal."""
        self._bound: list[BindRequest] = []
        """This batch's pods whose Binding is among its messages (metrics once published)."""
        self._parked: list[WaitingRecord] = []
        """This batch's pods that wait at PreBind (:mod:`.prebind_wait`)."""

    async def start(self) -> None:
        await self._bus.declare(topology.QUEUES)
        self._consumers = [
            await self._bus.consume(
                topology.BINDER_REQUESTS, self._on_requests, decode=BindBatch, max_batch=512
            ),
            await self._bus.consume(
                topology.BINDER_PERMIT, self._on_permit, decode=PermitDecision, max_batch=256
            ),
        ]
        self._timers = asyncio.create_task(self._timer_loop(), name="binder-permit-timers")
        self.endpoint = serve_metrics(self.metrics.registry, self._metrics_port)

    async def stop(self) -> None:
        while self._consumers:
            await self._consumers.pop().cancel()
        if self._timers is not None:
            self._timers.cancel()
            await asyncio.wait([self._timers])
            self._timers = None
        close_endpoint(self.endpoint)
        self.endpoint = None

    # -- bind requests ------------------------------------------------------------------

    async def _on_requests(self, batches: Sequence[Received[BindBatch]]) -> None:
        requests = [r for batch in batches for r in batch.value.requests]
        taken: list[WaitingRecord] = []
        async with self._lock:
            self._bound = []
            self.metrics.goroutines.labels("binding").set(len(requests))
            try:
                messages = await self._run(requests, taken)
            finally:
                self.metrics.goroutines.labels("binding").set(0)
            bound, self._bound = self._bound, []
        try:
            await self._bus.publish(messages)
        except BaseException:
            # The batch is redelivered; the waits it took must be there to take again.
            with contextlib.suppress(Exception):
                await self._store.return_waiting(taken)
            raise
        now = self._clock.now()
        for request in bound:
            started = request.started or now
            first = request.at or started
            self.metrics.scheduled(request.profile, request.attempt, now - started, now - first)

    async def _run(
        self, requests: Sequence[BindRequest], taken: list[WaitingRecord] | None = None
    ) -> list[Message]:
        """The messages of one batch; the waiting records it took go to ``taken``."""
        messages: list[Message] = []
        results: list[AttemptResult] = []
        recorded: list[BoundPod] = []
        binding: list[_Cycle] = []
        failing: list[tuple[_Cycle, Status]] = []
        for request in requests:
            cycle = self._cycle(request, results)
            if cycle is None:
                continue
            if not request.permit:
                binding.append(cycle)
                continue
            record = await self._store.take_waiting(request.uid, request.attempt)
            if record is None or record.state == "waiting":
                continue  # taken by another binder, or not resolved yet (it will be)
            cycle.waited = record
            if taken is not None:
                taken.append(record)
            if record.state == "allowed":
                binding.append(cycle)
            elif record.point == "PreBind":
                failing.append((cycle, prebind_wait.failure(record)))
            else:
                failing.append((cycle, _permit_status(record)))
        claims = [BindClaim(c.request.uid, c.request.node, c.request.attempt) for c in binding]
        try:
            granted = await self._store.begin_bind(claims, self._clock.now()) if claims else []
        except StoreLost as lost:  # the reservations went with the store: retried
            log.warning("not binding %d pods: %s", len(claims), lost)
            granted = [False] * len(claims)
        for cycle, ok in zip(binding, granted, strict=True):
            if not ok:
                reason = "the reservation expired or was taken over before binding"
                results.append(_result(cycle.request, "error", reason))
                continue
            status = await self._bind(cycle, messages, recorded)
            if status.is_success():
                activate = cycle.request.activate
                results.append(_result(cycle.request, "bound", activate=activate))
            elif status.code == Code.Wait:  # parked at PreBind: resumed later
                results.append(_result(cycle.request, "waiting"))  # the queue's credit back
            else:
                failing.append((cycle, status))
        parked, self._parked = self._parked, []
        if parked:
            await self._store.put_waiting(parked)
        if failing:
            await self.waiting.refresh()  # Unreserve may reject waiting siblings
            for cycle, status in failing:
                messages.extend(self._fail(cycle, status, results))
            await self._store.forget(
                [BindClaim(c.request.uid, c.request.node, c.request.attempt) for c, _ in failing]
            )
        if self.waiting.dirty:
            messages.extend(_resume((await self.waiting.flush()).resolved))
        if recorded:
            body = _encoder.encode(BoundBatch(bindings=recorded))
            traces = [bound.trace for bound in recorded]
            messages.append(Message(topology.BOUND.name, topology.BOUND_KEY, body, traces=traces))
        if results:
            body = _encoder.encode(ResultBatch(results=results))
            messages.append(Message(topology.RESULTS.name, topology.RESULTS_KEY, body))
        return messages

    def _cycle(self, request: BindRequest, results: list[AttemptResult]) -> _Cycle | None:
        framework = self.frameworks.get(request.profile)
        if framework is None:
            reason = f'no profile "{request.profile}" in this binder'
            results.append(_result(request, "error", reason))
            return None
        cycle = _Cycle(request, framework, PodInfo.of(pod_reference(request)))
        cycle.state.explain = explaining(cycle.pod.pod)  # its plugins' answers recorded
        if request.plugin_state:
            framework.restore_binding_state(
                cycle.state, {name: bytes(raw) for name, raw in request.plugin_state.items()}
            )
        return cycle

    async def _bind(self, cycle: _Cycle, out: list[Message], recorded: list[BoundPod]) -> Status:
        """WaitOnPermit (already resolved), PreBind, Bind, PostBind; the messages of a
        successful cycle go to ``out``."""
        request, framework, pod, state = cycle.request, cycle.framework, cycle.pod, cycle.state
        node = request.node
        with telemetry.continuing(tracer, "binding_cycle", request.trace) as continued:
            continued.span.set_attribute("ksched.pod", pod.key)
            continued.span.set_attribute("ksched.node", node)
            if cycle.waited is not None and cycle.waited.point == "Permit":
                self._waited(cycle.waited, "Success")
            profile = request.profile
            with Timed(
                self.metrics, "PreBind", profile, telemetry.step(tracer, "PreBind")
            ) as point:
                status = await framework.run_pre_bind_plugins(state, pod, node)
                point.status = status.code.name
            if not status.is_success():
                return status
            asked = prebind_wait.asked(framework, state, node)
            if asked is not None:
                return self._park(cycle, *asked, continued.carrier(), out, recorded)
            with Timed(self.metrics, "Bind", profile, telemetry.step(tracer, "Bind")) as point:
                status = await framework.run_bind_plugins(state, pod, node)
                point.status = status.code.name
            if not status.is_success():
                if status.is_skip():  # no Bind plugin bound it
                    reason = f'no Bind plugin bound pod "{pod.key}"'
                    return Status(Code.Error, (reason,))
                return status
            headers = {**continued.carrier(), ATTEMPT_HEADER: str(request.attempt)}
            out.extend(self._effects(cycle, headers, recorded))
            self._bound.append(request)
            if self._scheduled_events:
                event = pod_event(
                    pod.pod,
                    reason="Scheduled",
                    message=f"Successfully assigned {pod.key} to {node}",
                    warning=False,
                    action="Binding",
                    attempt=request.attempt,
                    now=self._clock.now(),
                )
                out.append(decision_message(event, _encoder.encode(event), headers))
            with Timed(self.metrics, "PostBind", profile, telemetry.step(tracer, "PostBind")):
                framework.run_post_bind_plugins(state, pod, node)
        return status

    def _park(
        self,
        cycle: _Cycle,
        plugin: str,
        wait: BindingWait,
        carrier: dict[str, str],
        out: list[Message],
        recorded: list[BoundPod],
    ) -> Status:
        """PreBind asked to wait: its effects and Event go out with the batch now, the
        pod waits at PreBind in the store (Wait: a ``waiting`` result, no Binding yet)."""
        request = cycle.request
        headers = {**carrier, ATTEMPT_HEADER: str(request.attempt)}
        out.extend(self._effects(cycle, headers, recorded))
        now = self._clock.now()
        event = pod_event(
            cycle.pod.pod,
            reason=wait.reason,
            message=wait.message,
            warning=False,
            action="Scheduling",
            attempt=request.attempt,
            now=now,
        )
        out.append(decision_message(event, _encoder.encode(event), headers))
        self._parked.append(prebind_wait.parked(request, plugin, wait, now))
        return Status(Code.Wait, (wait.message,), plugin)

    def _effects(
        self, cycle: _Cycle, headers: dict[str, str], recorded: list[BoundPod]
    ) -> list[Message]:
        out: list[Message] = []
        for effect in cycle.state.effects:
            match effect:
                case WatchEffect(kind=kind, type=kind_type, object=obj):
                    body = _encoder.encode(_WatchEvent(kind_type, obj))
                    key = topology.event_key(kind, kind_type)
                    out.append(Message(topology.EVENTS.name, key, body, dict(headers)))
                case ClaimStatusEffect(claim=claim):
                    out.append(claim_message(claim, _encoder.encode(claim), dict(headers)))
                case PodStatusEffect(patch=patch):
                    out.append(pod_status_message(patch, _encoder.encode(patch), dict(headers)))
                case BindEffect(node=node):
                    binding = binding_for(with_binding_results(cycle.pod.pod, cycle.state), node)
                    out.append(decision_message(binding, _encoder.encode(binding), headers))
                    recorded.append(BoundPod(binding=binding, trace=dict(headers)))
        return out

    def _fail(self, cycle: _Cycle, status: Status, results: list[AttemptResult]) -> list[Message]:
        """``handleBindingCycleError``: Unreserve, then the pod back to the queue —
        unschedulable with the FitError message when a plugin rejected it, else error —
        with its room given back (``forgotten``: the queue moves the pods it may help)."""
        request, framework, pod = cycle.request, cycle.framework, cycle.pod
        waited = cycle.waited
        if waited is not None and waited.point == "Permit" and status.code != Code.Success:
            self._waited(waited, status.code.name, request)
        with Timed(self.metrics, "Unreserve", request.profile):
            framework.run_reserve_plugins_unreserve(cycle.state, pod, request.node)
        plugins = [status.plugin] if status.plugin else []
        if status.is_rejected():
            message = rejection_message(pod, request.node, status)
            results.append(_result(request, "unschedulable", message, plugins, forgotten=True))
        else:
            message = status.message()
            results.append(_result(request, "error", message, plugins, forgotten=True))
        event = pod_event(
            pod.pod,
            reason="FailedScheduling",
            message=truncate_message(message),
            warning=True,
            action="Scheduling",
            attempt=request.attempt,
            now=self._clock.now(),
            scheduler_name=request.profile,
            annotations=explanation_annotations(pod.pod, cycle.state),
        )
        headers = {ATTEMPT_HEADER: str(request.attempt), **request.trace}
        return [decision_message(event, _encoder.encode(event), headers)]

    def _waited(
        self, record: WaitingRecord, result: str, request: BindRequest | None = None
    ) -> None:
        """WaitOnPermit's span and ``scheduler_permit_wait_duration_seconds``, from when
        the pod started waiting to now (the injected clock: waits span processes)."""
        started = _started(record)
        ended = max(self._clock.now(), started)
        self.metrics.waited(result, ended - started)
        context = telemetry.extract(request.trace) if request is not None else None
        span = tracer.start_span(
            "WaitOnPermit", context=context, kind=INTERNAL, start_time=int(started * 1e9)
        )
        span.set_attribute("ksched.result", result)
        span.set_attribute("ksched.plugins", sorted(record.waits))
        span.end(end_time=int(ended * 1e9))

    # -- permit decisions from outside --------------------------------------------------

    async def _on_permit(self, batches: Sequence[Received[PermitDecision]]) -> None:
        async with self._lock:
            records = await self._store.waiting()
            by_name = {
                (r.namespace, r.name): r
                for r in records.values()
                if r.state == "waiting" and r.point == "Permit"
            }
            messages: list[Message] = []
            resolved: list[WaitingRecord] = []
            now = self._clock.now()
            for received in batches:
                decision = received.value
                verdict = received.delivery.routing_key.split(".", 1)[0]
                record = by_name.get((decision.namespace, decision.name))
                problem = _refusal(decision, record, verdict)
                if problem is not None:
                    messages.append(_error(decision, received.delivery.routing_key, *problem))
                    continue
                assert record is not None
                if verdict == "allow":
                    after = await self._store.allow_waiting(record.uid, decision.plugin, now)
                else:
                    message = decision.message or f"rejected by {decision.plugin}"
                    after = await self._store.reject_waiting(
                        record.uid, decision.plugin, message, now
                    )
                if after is None:
                    messages.append(
                        _error(
                            decision,
                            received.delivery.routing_key,
                            "name",
                            "the pod no longer waits",
                        )
                    )
                elif after.state != "waiting":
                    resolved.append(after)
                    by_name.pop((decision.namespace, decision.name), None)
                else:
                    by_name[(decision.namespace, decision.name)] = after
            messages.extend(_resume(resolved))
        if messages:
            await self._bus.publish(messages)

    # -- timers -------------------------------------------------------------------------

    async def _timer_loop(self) -> None:
        while True:
            try:
                due = await self._store.next_waiting_deadline()
                now = self._clock.now()
                delay = POLL if due is None else min(max(due - now, 0.0), POLL)
                if delay > 0:
                    await self._clock.sleep(delay)
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("permit timers failed; retrying")
                await self._clock.sleep(POLL)

    async def tick(self) -> int:
        """Resolve the pods waiting at PreBind whose plugin decided, time out the
        waiting pods that are due and resume the resolved ones nobody handed on;
        returns how many were handed on."""
        now = self._clock.now()
        ready = await prebind_wait.poll(self._store, self.frameworks, now)
        expired = ready + await self._store.expire_waiting(now)
        stale = await self._store.resolved_before(now - RESUME_GRACE)
        seen = {r.uid for r in expired}
        records = expired + [r for r in stale if r.uid not in seen]
        if records:
            await self._bus.publish(_resume(records))
        return len(records)


def _resume(records: Sequence[WaitingRecord]) -> list[Message]:
    """Hand resolved waiting pods on to a binder: their BindRequests, again."""
    if not records:
        return []
    requests = [_request_decoder.decode(r.request) for r in records]
    body = _encoder.encode(BindBatch(requests=requests))
    traces = [request.trace for request in requests]
    return [Message(topology.BIND.name, topology.BIND_KEY, body, traces=traces)]


def _permit_status(record: WaitingRecord) -> Status:
    """How a rejected wait ended, as WaitOnPermit reports it: the plugin's rejection,
    or upstream's timeout message when ``message`` is empty."""
    message = record.message
    if not message:
        wait = record.waits.get(record.plugin, 0.0)
        message = (
            f"rejected due to timeout after waiting {go_duration(wait)} at plugin {record.plugin}"
        )
    return Status(Code.Unschedulable, (message,), record.plugin)


def _started(record: WaitingRecord) -> float:
    """When the pod started waiting (records written before ``since`` existed: from
    the deadlines still pending, else when it was resolved)."""
    if record.since:
        return record.since
    starts = [record.pending[p] - record.waits[p] for p in record.pending if p in record.waits]
    return min(starts, default=record.resolved_at)


def pod_reference(request: BindRequest) -> Pod:
    """The pod as far as its Binding and ``Scheduled`` Event name it: namespace, name,
    uid, resourceVersion, the scheduler's explanation and the schedulerName (the
    request's profile). Nothing else of the pod travels to the binder."""
    annotations = {EXPLAIN_ANNOTATION: request.explanation} if request.explanation else {}
    metadata = ObjectMeta(
        name=request.name,
        namespace=request.namespace,
        uid=request.uid,
        resource_version=request.resource_version,
        annotations=annotations,
    )
    return Pod(metadata=metadata, spec=PodSpec(scheduler_name=request.profile))


def _result(
    request: BindRequest,
    outcome: Outcome,
    message: str = "",
    plugins: Sequence[str] = (),
    **extra: Any,
) -> AttemptResult:
    return attempt_result(
        request, outcome, message, node=request.node, plugins=list(plugins), **extra
    )


__all__ = ["BinderService", "pod_reference"]
