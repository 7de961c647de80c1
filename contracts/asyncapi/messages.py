"""Schemas (from the msgspec Structs) and the messages that carry them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from contracts import topology
from contracts.asyncapi._base import (
    _DEAD_LETTER,
    _EXAMPLE_POD_EVENT,
    _WATCH_KINDS,
    JSON,
    SCHEMA_REF,
    TRACE_HEADERS,
)
from contracts.errors import ErrorReport
from contracts.events import ClusterBatch, WatchEvent
from contracts.eviction import Eviction
from contracts.k8s import Pod
from contracts.k8s.decisions import Binding, Event
from contracts.k8s.podgroup import PodGroup
from contracts.k8s.resource import ResourceClaim
from contracts.k8s.workload import SchedulingPodGroup
from contracts.kinds import EVENT_TYPES
from contracts.messages import BindBatch, BoundBatch, ResultBatch, ScheduleBatch
from contracts.permit import PermitDecision, WaitingPod
from contracts.podstatus import PodStatusPatch
from contracts.preemption import Preemption

NOMINATION: Final = "Nomination"
"""The message id of a preemption's nomination (a v1 Pod status update)."""
CLAIM_ALLOCATION: Final = "ClaimAllocation"
"""The message id of a ResourceClaim's status update (``claim.<ns>``): allocation and
reservation (PreBind), or deallocation (PostFilter)."""

# --- schemas -------------------------------------------------------------------------


def _top_level_types() -> list[type[Any]]:
    """Every type a message carries at its top level (the rest are reached from these)."""
    batches: list[type[Any]] = [ClusterBatch, ScheduleBatch, BindBatch, ResultBatch, BoundBatch]
    decisions: list[type[Any]] = [
        Binding,
        Event,
        WaitingPod,
        PodGroup,
        SchedulingPodGroup,
        Preemption,
        Eviction,
        PodStatusPatch,
    ]
    return [
        WatchEvent,
        *_WATCH_KINDS.values(),
        *batches,
        *decisions,
        PermitDecision,
        ErrorReport,
    ]


def _schemas() -> tuple[dict[type[Any], JSON], JSON]:
    types = list(dict.fromkeys(_top_level_types()))
    refs, components = msgspec.json.schema_components(types, ref_template=SCHEMA_REF)
    schemas: JSON = _asyncapi_schema(components)
    # msgspec.Raw has no schema (``{}``); the informer decodes it by the routing key.
    schemas[WatchEvent.__name__]["properties"]["object"] = {
        "type": "object",
        "description": (
            "The Kubernetes object, exactly as `kubectl get -o json` prints it. Its kind "
            "is the one in the routing key; see the per-kind messages for its schema."
        ),
    }
    schemas["TraceHeaders"] = _headers_schema({})
    schemas["DeadLetterHeaders"] = _headers_schema(
        {
            topology.REASON_HEADER: "Why the message was rejected.",
            topology.ORIGIN_EXCHANGE_HEADER: "The exchange it was published to.",
            topology.ORIGIN_QUEUE_HEADER: "The queue it was consumed from.",
        }
    )
    return dict(zip(types, refs, strict=True)), schemas


def _asyncapi_schema(node: Any) -> Any:
    """msgspec emits OpenAPI's object-valued ``discriminator``; AsyncAPI's is the property
    name alone (each variant still pins its tag with an ``enum``)."""
    if isinstance(node, dict):
        out = {k: _asyncapi_schema(v) for k, v in node.items()}
        discriminator = out.get("discriminator")
        if isinstance(discriminator, dict):
            out["discriminator"] = discriminator["propertyName"]
        return out
    if isinstance(node, list):
        return [_asyncapi_schema(v) for v in node]
    return node


def _headers_schema(extra: Mapping[str, str]) -> JSON:
    properties: JSON = {
        name: {"type": "string", "description": description}
        for name, description in {**TRACE_HEADERS, **extra}.items()
    }
    schema: JSON = {"type": "object", "properties": properties}
    if extra:
        schema["required"] = sorted(extra)
    return schema


def _ref(path: str) -> JSON:
    return {"$ref": path}


# --- messages ------------------------------------------------------------------------


def _message(
    name: str,
    payload: JSON,
    summary: str,
    *,
    headers: str = "TraceHeaders",
    examples: Sequence[JSON] = (),
) -> JSON:
    message: JSON = {
        "name": name,
        "title": name,
        "summary": summary,
        "contentType": "application/json",
        "headers": _ref(SCHEMA_REF.format(name=headers)),
        "payload": payload,
    }
    if examples:
        message["examples"] = list(examples)
    return message


def _watch_message_id(kind: str) -> str:
    return f"{_WATCH_KINDS[kind].__name__}WatchEvent"


def _messages(refs: Mapping[type[Any], JSON]) -> JSON:
    messages: JSON = {}
    types = ", ".join(t.lower() for t in EVENT_TYPES)
    for kind, struct in _WATCH_KINDS.items():
        key = topology.event_key(kind, "{type}")
        messages[_watch_message_id(kind)] = _message(
            _watch_message_id(kind),
            {
                "allOf": [
                    refs[WatchEvent],
                    {"type": "object", "properties": {"object": refs[struct]}},
                ]
            },
            f"A watch event about a {struct.__name__}; routing key `{key}` ({types}).",
            examples=(
                [{"name": "pending-pod", "payload": _EXAMPLE_POD_EVENT}] if struct is Pod else []
            ),
        )
    summaries: dict[type[Any], str] = {
        ClusterBatch: "Consecutive entries of the informer's event log, in seq order.",
        ScheduleBatch: (
            "Scheduling attempts the queue hands to any scheduler replica; each names its"
            " pod by uid (the replica resolves it in its projection as of `seq`)."
        ),
        BindBatch: (
            "Bind requests from a scheduler to any binder replica; each names its pod"
            " (uid, namespace, name, resourceVersion) and carries the plugins' decisions."
        ),
        ResultBatch: "How attempts ended, back to the queue (frees in-flight slots).",
        BoundBatch: (
            "The Bindings of one binder batch, each with its pod's trace context, for the"
            " informer to record in the event log (users get each on ksched.decisions)."
        ),
        Binding: "v1 Binding: the pod in metadata is bound to the Node in target.",
        Event: (
            "v1 Event about a pod (Scheduled, FailedScheduling, Preempted, NotReadyForScheduling)."
        ),
        WaitingPod: (
            "A pod started waiting at Permit on `node` (routing key `waiting.<namespace>`):"
            " its pending plugins, each with the RFC 3339 deadline of its wait."
        ),
        PodGroup: (
            "A PodGroup's status as the scheduler-plugins controller would write it"
            " (routing key `podgroup.<namespace>`): phase and member counts."
        ),
        SchedulingPodGroup: (
            "A native scheduling.k8s.io PodGroup's scheduling condition (routing key"
            " `podgroup.<namespace>`, GenericWorkload): PodGroupInitiallyScheduled"
            " (v1beta1) or PodGroupScheduled (v1alpha2), False/Unschedulable with the"
            " attempt's message when a member fails, True/Scheduled once minCount members"
            " are bound (terminal)."
        ),
        Preemption: (
            "A preemption (routing key `preemption.<namespace>`): the preemptor, the node"
            " it is nominated to, and the victims to delete, each with the DisruptionTarget"
            " condition (reason PreemptionByScheduler) to set on it first. The preemptor is"
            " scheduled there once the victims' DELETED watch events arrive."
        ),
        PodStatusPatch: (
            "A pending pod's PodScheduled condition (routing key `status.<namespace>`,"
            " KEP-5501): PreEnqueue has held it back for 5 s, so `condition` (status False,"
            " reason NotReadyForScheduling, the plugin's message) is to be set on it; or,"
            " once it passes PreEnqueue again, `cleared`: the condition to remove if the"
            " pod still has its reason. A message the pod already shows is never sent."
            " From the binder (DRAExtendedResource): neither, but"
            " `extendedResourceClaimStatus`, to set on the pod's status, after the"
            " `claim.<namespace>` that creates the pod's extended-resource claim and before"
            " the pod's Binding."
        ),
        Eviction: (
            "A policy/v1 Eviction decided by the descheduler (routing key"
            " `eviction.<namespace>`): the pod in metadata, the profile, plugin and node in"
            " its annotations, the policy's grace period and the pod's uid in deleteOptions."
            " The pod counts as being evicted until its DELETED watch event arrives."
        ),
        PermitDecision: (
            "Allow (routing key `allow.<namespace>`) or reject (`reject.<namespace>`) a pod"
            " waiting at Permit, for one plugin (`ExternalPermit`). A decision for a pod"
            " that is not waiting at that plugin is reported on `ksched.errors`"
            " (`error.permit`)."
        ),
        ErrorReport: "Why an inbound message was refused, naming the object and field.",
    }
    for struct, summary in summaries.items():
        messages[struct.__name__] = _message(struct.__name__, refs[struct], summary)
    messages[NOMINATION] = _message(
        NOMINATION,
        refs[Pod],
        "A v1 Pod status update (routing key `nomination.<namespace>`): only the pod's"
        " identity and `status.nominatedNodeName`, the node preemption nominated it to"
        " (empty: its nomination was cleared).",
    )
    messages[CLAIM_ALLOCATION] = _message(
        CLAIM_ALLOCATION,
        refs[ResourceClaim],
        f"A resource.k8s.io/v1 ResourceClaim (routing key `{topology.CLAIM_DECISION}"
        ".<namespace>`): DynamicResources' status update. From the binder (PreBind): the"
        " `status.allocation` chosen and the pod in `status.reservedFor`, before the pod's"
        " Binding; when an allocated device has `bindingConditions`, the Binding follows"
        " only once the claim's `status.devices` report them all True (a client publishes"
        " the claim MODIFIED), and never when a `bindingFailureConditions` is True or"
        " `bindingTimeout` passes. A claim annotated"
        ' `resource.kubernetes.io/extended-resource-claim: "true"` is new (made for the'
        " pod's extended resources backed by DRA): create it. From the scheduler"
        " (PostFilter): the claim deallocated (no `allocation`, `reservedFor` or"
        " `devices`; metadata untouched), so that the pod's next attempt can pick other"
        " devices. Apply either by publishing the claim's MODIFIED watch event; until then"
        " an allocation's devices count as taken by the pod, and a deallocated claim keeps"
        " its devices.",
    )
    messages[_DEAD_LETTER] = _message(
        _DEAD_LETTER,
        {"description": "The rejected message's body, unchanged."},
        f"A poison message, with the reason in the `{topology.REASON_HEADER}` header.",
        headers="DeadLetterHeaders",
    )
    return messages


def _payload_messages(payload: str) -> list[str]:
    """Message ids for a QueueSpec.payload name."""
    if payload == WatchEvent.__name__:
        return [_watch_message_id(kind) for kind in _WATCH_KINDS]
    return [payload or _DEAD_LETTER]


_EXCHANGE_MESSAGES: Final[dict[str, list[str]]] = {
    topology.EVENTS.name: _payload_messages(WatchEvent.__name__),
    topology.CLUSTER.name: [ClusterBatch.__name__],
    topology.SCHEDULE.name: [ScheduleBatch.__name__],
    topology.BIND.name: [BindBatch.__name__],
    topology.RESULTS.name: [ResultBatch.__name__],
    topology.BOUND.name: [BoundBatch.__name__],
    topology.DECISIONS.name: [
        Binding.__name__,
        Event.__name__,
        WaitingPod.__name__,
        PodGroup.__name__,
        SchedulingPodGroup.__name__,
        Preemption.__name__,
        Eviction.__name__,
        PodStatusPatch.__name__,
        NOMINATION,
        CLAIM_ALLOCATION,
    ],
    topology.PERMIT.name: [PermitDecision.__name__],
    topology.ERRORS.name: [ErrorReport.__name__],
    topology.DEAD.name: [_DEAD_LETTER],
}
