"""Building the v1 Events and Bindings ksched publishes, in kube-scheduler's words."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from contracts import topology
from contracts.k8s import Binding, Event, EventSource, ObjectMeta, ObjectReference, Pod
from services.common.bus import Message

ATTEMPT_HEADER = "x-ksched-attempt"
"""Header on decisions: the scheduling attempt (1-based) that produced them."""


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
) -> Event:
    """An Event about ``pod``. Its name is ``<pod>.<hash>``, stable for the same pod,
    attempt and reason, so a redelivered attempt publishes the same Event."""
    meta = pod.metadata
    digest = hashlib.sha1(f"{meta.uid}/{attempt}/{reason}".encode()).hexdigest()[:16]
    stamp = rfc3339(now)
    component = scheduler_name or pod.spec.scheduler_name
    return Event(
        metadata=ObjectMeta(name=f"{meta.name}.{digest}", namespace=meta.namespace),
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
    meta = pod.metadata
    return Binding(
        metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=meta.uid),
        target=ObjectReference(api_version="v1", kind="Node", name=node),
    )


def decision_message(decision: Binding | Event, body: bytes, headers: dict[str, str]) -> Message:
    kind = "binding" if isinstance(decision, Binding) else "event"
    key = topology.decision_key(kind, decision.metadata.namespace)
    return Message(topology.DECISIONS.name, key, body, headers)
