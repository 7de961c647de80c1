"""What the informer makes of a batch it committed to the event log: the store's
projected entries and the ``ClusterBatch`` message on ``ksched.cluster`` (each from the
bytes the batch's objects were encoded to once, when given: the module
services.common.eventlog.encoded), and the Priority admission applied to a pod as it
is ingested."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from opentelemetry import trace

from contracts import topology
from contracts.events import LogEntry, PodEntry
from contracts.k8s import TERMINAL_PHASES, Pod, PriorityClass, ResourceClaim
from contracts.kinds import KubeObject
from services.common import telemetry
from services.common.bus import Message
from services.common.eventlog.encoded import batch_body, entry_lines
from services.common.k8s.devices import allocated_devices
from services.common.resources import node_allocatable, pod_requests
from services.common.store import PODS, PodCharge, ProjectedEntry
from services.informer.limits import SYSTEM_PRIORITY_CLASSES
from services.informer.state import Staged
from services.informer.validate import object_key

tracer = telemetry.tracer("informer")

_encoder = msgspec.json.Encoder()


def admitted_priority(staged: Staged, pod: Pod) -> Pod:
    """``pod`` with ``spec.priority`` set from its ``priorityClassName`` when it names a
    known class (or a system one) and no priority is given, as the API server's
    Priority admission sets it on creation (pods as ``kubectl get`` prints them have it
    already). Other pods are left as they are (the queue resolves their class)."""
    name = pod.spec.priority_class_name
    if pod.spec.priority is not None or not name:
        return pod
    found = staged.get("priorityclass", name)
    if isinstance(found, PriorityClass):
        value = found.value
    elif name in SYSTEM_PRIORITY_CLASSES:
        value = SYSTEM_PRIORITY_CLASSES[name]
    else:
        return pod
    spec = msgspec.structs.replace(pod.spec, priority=value)
    return msgspec.structs.replace(pod, spec=spec)


def cluster_message(events: Sequence[LogEntry], lines: Sequence[bytes] | None = None) -> Message:
    """The ``ksched.cluster`` message of ``events``; ``lines``: their JSON, if encoded."""
    with tracer.start_as_current_span(
        "publish_cluster_batch", kind=trace.SpanKind.INTERNAL
    ) as span:
        span.set_attribute("ksched.events", len(events))
        span.set_attribute("ksched.seq.last", events[-1].seq)
        body = batch_body(lines or entry_lines(events))
        return Message(topology.CLUSTER.name, "", body, telemetry.inject())


def projected(event: LogEntry, encoded: bytes = b"") -> ProjectedEntry:
    """The store's entry for ``event``; ``encoded``: its object's JSON, if encoded."""
    obj: KubeObject = event.object
    kind = str(event.__struct_config__.tag)
    key = object_key(kind, obj.metadata)
    deleted = event.type == "DELETED"
    body = None if deleted else encoded or _encoder.encode(obj)
    if isinstance(event, PodEntry):
        pod = event.object
        node = None if deleted or pod.status.phase in TERMINAL_PHASES else pod.spec.node_name
        requests = {**pod_requests(pod), PODS: 1}
        return ProjectedEntry(
            event.seq, "pod", key, body, pod=PodCharge(pod.metadata.uid, node, requests)
        )
    if kind == "node":
        allocatable = None if deleted else node_allocatable(event.object)  # type: ignore[arg-type]
        return ProjectedEntry(event.seq, kind, key, body, allocatable=allocatable)
    if isinstance(obj, ResourceClaim):
        devices = () if deleted else allocated_devices(obj)
        return ProjectedEntry(event.seq, kind, key, body, devices=devices)
    return ProjectedEntry(event.seq, kind, key, body)


__all__ = ["admitted_priority", "cluster_message", "projected"]
