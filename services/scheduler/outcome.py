"""What one batch of the scheduling cycle ends with (scheduler.cycle's BatchOutcome),
for the service to publish: BindRequests, failures with their FailedScheduling Events,
waiting pods, preemptions, and the counts the metrics take; and what an attempt's result
becomes on the way: its explanation (JSON), the charge of its reservation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from contracts.k8s import Pod, ResourceClaim
from contracts.messages import AttemptResult, BindRequest, ScheduleRequest
from contracts.permit import PendingPlugin
from contracts.permit import WaitingPod as WaitingPodAnnouncement
from services.common.decisions import rfc3339_precise
from services.common.store import PODS, WaitingRecord
from services.framework.api.effects import ClaimStatusEffect
from services.framework.api.interface import CycleState, PostFilterResult
from services.framework.api.types import PodInfo
from services.framework.runtime.result import ScheduleResult
from services.framework.runtime.results import results_of


@dataclass(slots=True)
class Failure:
    """An attempt that did not end with a BindRequest; ``event`` asks for a
    FailedScheduling Event (unschedulable and error outcomes)."""

    request: ScheduleRequest
    result: AttemptResult
    event: bool
    explanation: str | None = None
    """The scheduler's explanation (JSON), when the attempt was explained."""
    pod: Pod | None = None
    """The pod as this replica's projection holds it (None: not pending there); the
    FailedScheduling Event is about it."""


@dataclass(slots=True)
class BatchOutcome:
    binds: list[BindRequest] = field(default_factory=list)
    """Pods Permit let through (or that a flush resolved): published on ``ksched.bind``."""
    failures: list[Failure] = field(default_factory=list)
    waiting: list[WaitingPodAnnouncement] = field(default_factory=list)
    """Pods that started waiting at Permit: announced on ``waiting.<ns>``; their
    attempt goes on (result ``waiting``)."""
    waiting_results: list[AttemptResult] = field(default_factory=list)
    preemption_attempts: int = 0
    """Attempts that ran DefaultPreemption's PostFilter (``scheduler_preemption_attempts``)."""
    preemptions: list[Preempted] = field(default_factory=list)
    """Preemptions decided by PostFilter: published on ``preemption.<ns>`` (and the
    nominations on ``nomination.<ns>``, the victims' ``Preempted`` Events)."""
    claims: list[ClaimDecision] = field(default_factory=list)
    """ResourceClaims PostFilter deallocated (DynamicResources): published on
    ``claim.<ns>`` before the FailedScheduling Events; a client applies each."""
    nomination_conflicts: int = 0
    """Preemptions not carried out because another replica nominated a pod to the
    node meanwhile (their pods were scheduled again)."""
    algorithm: list[float] = field(default_factory=list)
    """Seconds each ``schedule_pod`` took (``scheduler_scheduling_algorithm_duration_seconds``)."""
    algorithm_cpu: float = 0.0
    """CPU seconds this thread spent inside those ``schedule_pod`` calls
    (``ksched_scheduling_cycle_cpu_seconds_total``)."""
    assume_conflicts: int = 0
    """Reservations the store refused because the node no longer had the room (or a
    DRA device they take is held by another pod or a claim)."""
    domain_conflicts: int = 0
    """Reservations the store refused because another replica placed a pod meanwhile
    in a domain the decision read (scheduler.domains)."""
    release_conflicts: int = 0
    """PostFilter rejections of a pod group the store refused because another group's
    release came first since this replica's view (scheduler.releases; their pods were
    scheduled again, at most ``max_conflict_retries`` times)."""


@dataclass(frozen=True, slots=True)
class ClaimDecision:
    """A claim's new status a PostFilter plugin asked for, in the attempt that asked."""

    request: ScheduleRequest
    claim: ResourceClaim


def claim_decisions(request: ScheduleRequest, state: CycleState | None) -> list[ClaimDecision]:
    """The ClaimStatusEffects a failed attempt's PostFilter left (the scheduling cycle
    has no other plugin that leaves effects)."""
    if state is None:
        return []
    return [
        ClaimDecision(request, effect.claim)
        for effect in state.effects
        if isinstance(effect, ClaimStatusEffect)
    ]


@dataclass(slots=True)
class Preempted:
    request: ScheduleRequest
    preemptor: PodInfo
    result: PostFilterResult
    seen: frozenset[str] = frozenset()
    """The pods nominated to the node when this replica chose it (the claim's)."""


def resumed(records: Sequence[WaitingRecord]) -> list[BindRequest]:
    """The BindRequests of waiting pods that were just allowed or rejected: a binder
    takes each from the store (``take_waiting``) and binds it or fails it."""
    return [_request_decoder.decode(record.request) for record in records]


_request_decoder = msgspec.json.Decoder(BindRequest)


def request_of(request: BindRequest) -> ScheduleRequest:
    """The ScheduleRequest a BindRequest answered (to report its attempt's result)."""
    return ScheduleRequest(
        uid=request.uid,
        namespace=request.namespace,
        name=request.name,
        attempt=request.attempt,
        profile=request.profile,
        seq=0,
        trace=request.trace,
    )


_encoder = msgspec.json.Encoder()


def explanation_json(result: ScheduleResult) -> str | None:
    """The attempt's explanation as the annotation carries it (None: not explained)."""
    if result.explanation is None:
        return None
    return _encoder.encode(result.explanation.to_json()).decode()


class Explained(Protocol):
    explanation: str | None
    state: CycleState


def explained(attempt: Explained) -> str | None:
    """The attempt's explanation with what each plugin answered so far (key
    ``pluginResults``, framework.runtime.results: PreFilter, PreScore, raw scores,
    Reserve, Permit); None when the attempt was not explained."""
    recorded = results_of(attempt.state) if attempt.explanation else None
    if recorded is None or attempt.explanation is None:
        return attempt.explanation
    explanation = msgspec.json.decode(attempt.explanation)
    explanation["pluginResults"] = recorded.to_json()
    return _encoder.encode(explanation).decode()


def charged_requests(pod: PodInfo) -> dict[str, int]:
    """What the store charges the node for the pod: its positive requests plus
    ``pods: 1``, as the bound pod is charged (``Reservation.checked`` says which of them
    the store checks)."""
    charged = {name: amount for name, amount in pod.requests.items() if amount > 0}
    charged[PODS] = 1
    return charged


def announcement(pod: PodInfo, node: str, pending: dict[str, float]) -> WaitingPodAnnouncement:
    """What ``ksched.decisions`` says of a pod that started waiting at Permit on
    ``node``: the plugins it waits for (``pending``: plugin → deadline)."""
    meta = pod.pod.metadata
    return WaitingPodAnnouncement(
        namespace=meta.namespace or "default",
        name=meta.name,
        uid=pod.uid,
        node=node,
        pending_plugins=[
            PendingPlugin(name=name, deadline=rfc3339_precise(deadline))
            for name, deadline in sorted(pending.items())
        ],
    )
