"""Building the v1 Events and Bindings ksched publishes, in kube-scheduler's words."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime

import msgspec

from contracts import topology
from contracts.k8s import (
    Binding,
    Event,
    EventSource,
    ObjectMeta,
    ObjectReference,
    Pod,
    ResourceClaim,
)
from contracts.permit import WaitingPod as WaitingPodAnnouncement
from contracts.podstatus import PodStatusPatch
from services.common.bus import Message

ATTEMPT_HEADER = "x-ksched-attempt"
"""Header on decisions: the scheduling attempt (1-based) that produced them."""

EXPLAIN_ANNOTATION = "ksched.io/explain"
"""On a pod, ``"true"`` asks the scheduler to explain its decision. On a Binding or a
FailedScheduling Event, the explanation itself: a JSON object (see
``services.framework.runtime.explain``). Between the scheduler and the binder it
rides in the BindRequest's ``explanation``, which the binder puts back on the pod's
annotation when it builds the Binding."""


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_precise(seconds: float) -> str:
    """RFC 3339 in UTC with milliseconds when there are any (``...T10:00:00.5Z``)."""
    stamp = datetime.fromtimestamp(seconds, UTC)
    if stamp.microsecond == 0:
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    millis = f"{stamp.microsecond // 1000:03d}".rstrip("0") or "0"
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis}Z"


def pod_event(
    pod: Pod,
    *,
    reason: str,
    message: str,
    warning: bool,
    action: str,
    attempt: int,
    now: float,
    scheduler_name: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Event:
    """An Event about ``pod``. Its name is ``<pod>.<hash>``, stable for the same pod,
    attempt and reason, so a redelivered attempt publishes the same Event."""
    meta = pod.metadata
    digest = hashlib.sha1(f"{meta.uid}/{attempt}/{reason}".encode()).hexdigest()[:16]
    stamp = rfc3339(now)
    component = scheduler_name or pod.spec.scheduler_name
    return Event(
        metadata=ObjectMeta(
            name=f"{meta.name}.{digest}",
            namespace=meta.namespace,
            annotations=dict(annotations or {}),
        ),
        involved_object=ObjectReference(
            api_version="v1",
            kind="Pod",
            namespace=meta.namespace,
            name=meta.name,
            uid=meta.uid,
            resource_version=meta.resource_version,
        ),
        reason=reason,
        message=message,
        type="Warning" if warning else "Normal",
        source=EventSource(component=component),
        first_timestamp=stamp,
        last_timestamp=stamp,
        action=action,
        reporting_component=component,
    )


def binding_for(pod: Pod, node: str) -> Binding:
    """The Binding of ``pod`` to ``node``; it carries the scheduler's explanation when
    the pod has one (:func:`with_explanation`)."""
    meta = pod.metadata
    explanation = meta.annotations.get(EXPLAIN_ANNOTATION, "")
    annotations = {EXPLAIN_ANNOTATION: explanation} if explanation.startswith("{") else {}
    return Binding(
        metadata=ObjectMeta(
            name=meta.name, namespace=meta.namespace, uid=meta.uid, annotations=annotations
        ),
        target=ObjectReference(api_version="v1", kind="Node", name=node),
    )


def explain_requested(pod: Pod) -> bool:
    """Whether the pod asks for an explanation (annotation ``ksched.io/explain: "true"``)."""
    return pod.metadata.annotations.get(EXPLAIN_ANNOTATION) == "true"


def with_explanation(pod: Pod, explanation: str) -> Pod:
    """``pod`` carrying ``explanation`` (JSON) in its explain annotation."""
    annotations = {**pod.metadata.annotations, EXPLAIN_ANNOTATION: explanation}
    metadata = msgspec.structs.replace(pod.metadata, annotations=annotations)
    return msgspec.structs.replace(pod, metadata=metadata)


def decision_message(decision: Binding | Event, body: bytes, headers: dict[str, str]) -> Message:
    kind = "binding" if isinstance(decision, Binding) else "event"
    key = topology.decision_key(kind, decision.metadata.namespace)
    return Message(topology.DECISIONS.name, key, body, headers)


def claim_message(claim: ResourceClaim, body: bytes, headers: dict[str, str]) -> Message:
    """A ResourceClaim with its allocation and reservation (``claim.<namespace>``,
    contracts.topology.CLAIM_DECISION): ``body`` is its JSON."""
    key = topology.decision_key(topology.CLAIM_DECISION, claim.metadata.namespace)
    return Message(topology.DECISIONS.name, key, body, headers)


def pod_status_message(patch: PodStatusPatch, body: bytes, headers: dict[str, str]) -> Message:
    """A pod status update (``status.<namespace>``): ``body`` is the patch's JSON."""
    key = topology.decision_key("status", patch.namespace)
    return Message(topology.DECISIONS.name, key, body, headers)


def waiting_message(
    waiting: WaitingPodAnnouncement, body: bytes, headers: dict[str, str]
) -> Message:
    """The announcement of a pod that started waiting at Permit (``waiting.<ns>``)."""
    key = topology.decision_key("waiting", waiting.namespace)
    return Message(topology.DECISIONS.name, key, body, headers)
