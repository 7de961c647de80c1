"""The binder: the binding cycle of each assumed pod.

For a batch of BindRequests it claims every reservation in the store (``begin_bind``:
from then on the reservation cannot expire), publishes a v1 Binding and a ``Scheduled``
Event per pod on ``ksched.decisions`` and the results for the queue, all confirmed in
one publish. The informer consumes the Bindings and records them in the event log.

A reservation that expired or was taken over is not bound: the result is ``error`` and
the queue retries the pod after its backoff. If the publish fails the batch is
redelivered; the claim holds, so the same pods are bound (at least once; the informer
ignores a repeated Binding to the same node).

A BindRequest is a reference (see :mod:`contracts.messages`): the binder holds no
projection, and the Binding and the Event name the pod by the request's namespace,
name, uid and resourceVersion (:func:`pod_reference`).

PreBind: the volume bindings the scheduler decided (VolumeBinding) are published as
watch events just before the Binding, in the same publish (see :mod:`.prebind`).
Permit waits and the other PreBind/PostBind plugins join this cycle with the framework
issue.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec

from contracts import topology
from contracts.k8s import ObjectMeta, Pod, PodSpec, namespaced_name
from contracts.messages import AttemptResult, BindBatch, BindRequest, ResultBatch
from services.binder.prebind import volume_messages
from services.common import telemetry
from services.common.bus import Bus, Consumer, Message, Received
from services.common.clock import Clock
from services.common.decisions import (
    ATTEMPT_HEADER,
    EXPLAIN_ANNOTATION,
    binding_for,
    decision_message,
    pod_event,
)
from services.common.store import BindClaim, ClusterStore, StoreLost

log = logging.getLogger("ksched.binder")
tracer = telemetry.tracer("binder")

_encoder = msgspec.json.Encoder()


class BinderService:
    def __init__(
        self, bus: Bus, store: ClusterStore, clock: Clock, *, scheduled_events: bool = True
    ) -> None:
        """``scheduled_events``: also publish the ``Scheduled`` Event per pod, as
        kube-scheduler does (one more message per pod on the way out)."""
        self._bus = bus
        self._store = store
        self._clock = clock
        self._scheduled_events = scheduled_events
        self._consumer: Consumer | None = None

    async def start(self) -> None:
        await self._bus.declare(topology.QUEUES)
        self._consumer = await self._bus.consume(
            topology.BINDER_REQUESTS, self._on_requests, decode=BindBatch, max_batch=512
        )

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.cancel()
            self._consumer = None

    async def _on_requests(self, batches: Sequence[Received[BindBatch]]) -> None:
        requests = [r for batch in batches for r in batch.value.requests]
        claims = [BindClaim(r.uid, r.node, r.attempt) for r in requests]
        try:
            granted = await self._store.begin_bind(claims)
        except StoreLost as lost:  # the reservations went with the store: retried
            log.warning("not binding %d pods: %s", len(claims), lost)
            granted = [False] * len(claims)
        messages: list[Message] = []
        results: list[AttemptResult] = []
        for request, ok in zip(requests, granted, strict=True):
            if ok:
                messages.extend(self._bind(request))
                results.append(_result(request, "bound"))
            else:
                results.append(
                    _result(
                        request,
                        "error",
                        "the reservation expired or was taken over before binding",
                    )
                )
        body = _encoder.encode(ResultBatch(results=results))
        messages.append(Message(topology.RESULTS.name, topology.RESULTS_KEY, body))
        await self._bus.publish(messages)

    def _bind(self, request: BindRequest) -> list[Message]:
        pod = pod_reference(request)
        context = telemetry.extract(request.trace)
        with tracer.start_as_current_span("binding_cycle", context=context) as span:
            span.set_attribute("ksched.pod", namespaced_name(pod.metadata))
            span.set_attribute("ksched.node", request.node)
            out: list[Message] = []
            if request.volume_bindings:
                with tracer.start_as_current_span("PreBind"):
                    out.extend(volume_messages(request, telemetry.inject()))
            with tracer.start_as_current_span("Bind"):
                headers = {**telemetry.inject(), ATTEMPT_HEADER: str(request.attempt)}
                binding = binding_for(pod, request.node)
                out.append(decision_message(binding, _encoder.encode(binding), headers))
            if self._scheduled_events:
                event = pod_event(
                    pod,
                    reason="Scheduled",
                    message=(
                        f"Successfully assigned {namespaced_name(pod.metadata)} to {request.node}"
                    ),
                    warning=False,
                    action="Binding",
                    attempt=request.attempt,
                    now=self._clock.now(),
                )
                out.append(decision_message(event, _encoder.encode(event), headers))
        return out


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


def _result(request: BindRequest, outcome: str, message: str = "") -> AttemptResult:
    return AttemptResult(
        uid=request.uid,
        namespace=request.namespace or "default",
        name=request.name,
        attempt=request.attempt,
        outcome=outcome,  # type: ignore[arg-type]
        node=request.node,
        message=message,
    )
