"""The scheduling request the queue hands out for one attempt of a pod."""

from __future__ import annotations

from contracts.k8s import namespaced_name
from contracts.messages import ScheduleRequest
from services.common import telemetry
from services.queue.types import QueueEntry

tracer = telemetry.tracer("queue")


def schedule_request(
    info: QueueEntry, origin: tuple[float, dict[str, str]], seq: int
) -> ScheduleRequest:
    """The request for ``info``'s attempt: ``origin`` is when the pod was first queued
    and the trace context it came with (its ``scheduling_queue.pop`` span continues that
    trace); ``seq`` the projection's applied seq the queue decided at."""
    at, carrier = origin
    meta = info.pod.metadata
    with telemetry.continuing(tracer, "scheduling_queue.pop", carrier) as continued:
        continued.span.set_attribute("ksched.pod", namespaced_name(meta))
        continued.span.set_attribute("ksched.attempt", info.attempts)
        return ScheduleRequest(
            uid=info.uid,
            namespace=meta.namespace,
            name=meta.name,
            attempt=info.attempts,
            profile=info.profile,
            seq=seq,
            at=at,
            trace=continued.carrier(),
        )
