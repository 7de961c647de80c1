"""What the steps of one batch of the scheduling cycle (scheduler.cycle) hand each
other: each request's :class:`Attempt`, the :class:`Batch` they share, a round's store
answers (:class:`Answered`); and what a reserved attempt becomes (:func:`reserved`: its
BindRequest, and for a pod waiting at Permit its announcement and waiting result)."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
from opentelemetry import trace

from contracts.messages import BindRequest, ScheduleRequest, attempt_result
from services.common import telemetry
from services.common.decisions import EXPLAIN_ANNOTATION
from services.framework.api.interface import CycleState
from services.framework.api.types import PodInfo, pod_uid
from services.framework.runtime.framework import Framework
from services.framework.runtime.waiting_pods import SharedWaitingPod, SharedWaitingPods
from services.scheduler.nominated import BatchNominations
from services.scheduler.outcome import BatchOutcome, announcement, explained


@dataclass(slots=True)
class Attempt:
    """One request's attempt as a batch schedules it (again after a conflict)."""

    request: ScheduleRequest
    framework: Framework
    pod: PodInfo
    span: trace.Span
    state: CycleState = field(default_factory=CycleState)
    node: str = ""
    conflicts: int = 0
    touches: tuple[str, ...] = ()
    explain: bool = False
    explanation: str | None = None


@dataclass(slots=True)
class Batch:
    """What the steps of one batch hand each other; none of it outlives the batch."""

    outcome: BatchOutcome
    started: float
    """When the batch began (the clock's): each BindRequest's ``started``."""
    nominations: BatchNominations
    """Replaced when the batch's preemptors are scheduled again."""
    claimed: int = 0
    """How many of the outcome's preemptions had their nominations claimed."""


@dataclass(slots=True)
class Answered:
    """A round's reservations as the store answered them: the pods it assumed (on to
    Permit), those to schedule again, and the placement versions it says moved."""

    assumed: list[Attempt] = field(default_factory=list)
    retry: list[Attempt] = field(default_factory=list)
    moved: dict[str, int] = field(default_factory=dict)


def reserved(
    attempt: Attempt,
    batch: Batch,
    waiting_pods: SharedWaitingPods | None,
    *,
    permit: bool = False,
) -> None:
    """The pod goes to a binder (``permit``: once every Permit plugin allowed it;
    it waits meanwhile, as ``waiting_pods`` holds it)."""
    outcome = batch.outcome
    node, request, meta = attempt.node, attempt.request, attempt.pod.pod.metadata
    framework = attempt.framework
    state = framework.binding_state(attempt.state)
    activate = sorted(pod_uid(p) for p in attempt.state.pods_to_activate.values())
    if permit:
        waiting = waiting_pods.get_waiting_pod(attempt.pod.uid) if waiting_pods else None
        pending = waiting.pending_deadlines() if isinstance(waiting, SharedWaitingPod) else {}
        outcome.waiting.append(announcement(attempt.pod, node, pending))
        outcome.waiting_results.append(
            attempt_result(request, "waiting", node=node, activate=activate)
        )
        activate = []  # the waiting result hands them on
    outcome.binds.append(
        BindRequest(
            uid=request.uid,
            namespace=meta.namespace,
            name=meta.name,
            resource_version=meta.resource_version,
            explanation=(explained(attempt) or meta.annotations.get(EXPLAIN_ANNOTATION, "")),
            node=node,
            attempt=request.attempt,
            profile=request.profile,
            at=request.at,
            started=batch.started,
            trace=telemetry.inject(trace.set_span_in_context(attempt.span)),
            plugin_state={name: msgspec.Raw(data) for name, data in state.items()},
            permit=permit,
            activate=activate,
        )
    )
    attempt.span.set_attribute("ksched.node", node)
    attempt.span.end()


__all__ = ["Answered", "Attempt", "Batch", "reserved"]
