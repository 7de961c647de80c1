"""What the scheduler decides, as Kubernetes objects: v1 Binding and v1 Event."""

from __future__ import annotations

from contracts.k8s.base import ObjectMeta, ObjectReference, Wire


class Binding(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Binding"):
    """``POST pods/binding``: bind the pod named by ``metadata`` to ``target`` (a Node)."""

    api_version: str = "v1"
    metadata: ObjectMeta
    target: ObjectReference


class EventSource(Wire, kw_only=True, frozen=True):
    component: str = "default-scheduler"
    host: str | None = None


class Event(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Event"):
    """A v1 Event about a pod: reasons Scheduled, FailedScheduling, Preempted."""

    api_version: str = "v1"
    metadata: ObjectMeta
    involved_object: ObjectReference
    reason: str
    message: str
    type: str = "Normal"
    source: EventSource = EventSource()
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    count: int = 1
    action: str | None = None
    reporting_component: str = "default-scheduler"
    reporting_instance: str | None = None


Decision = Binding | Event
"""Everything published on ``ksched.decisions`` (later: Eviction, nominations)."""
