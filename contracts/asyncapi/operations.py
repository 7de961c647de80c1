"""Operations: who publishes and who consumes on each channel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from contracts import topology
from contracts.asyncapi._base import AMQP_BINDING_VERSION, JSON, Action
from contracts.asyncapi.channels import _REPLICA_FEED, channel_id
from contracts.asyncapi.messages import NOMINATION, _ref
from contracts.eviction import Eviction
from contracts.k8s.decisions import Event
from contracts.k8s.podgroup import PodGroup
from contracts.k8s.workload import SchedulingPodGroup
from contracts.permit import WaitingPod
from contracts.podstatus import PodStatusPatch
from contracts.preemption import Preemption

# --- operations ----------------------------------------------------------------------

_Hop = tuple[str, Action, str, Sequence[str] | None, str, str]
"""operation id, action, exchange or queue name, message ids (None: all of the
channel's), tag, summary."""

_HOPS: Final[tuple[_Hop, ...]] = (
    # What a ksched user does.
    (
        "publishWatchEvent",
        "send",
        topology.EVENTS.name,
        None,
        "client",
        "Publish a Kubernetes watch event for ksched to ingest.",
    ),
    (
        "receiveDecisions",
        "receive",
        topology.DECISIONS.name,
        None,
        "client",
        "Receive Bindings, Events, waiting pods, PodGroup status, pods' PodScheduled"
        " conditions and ResourceClaims' allocations (bind a queue with `binding.*`,"
        " `event.<ns>`, `waiting.#`, `podgroup.#`, `status.#`, `claim.#` or `#`).",
    ),
    (
        "publishPermitDecision",
        "send",
        topology.PERMIT.name,
        None,
        "client",
        "Allow or reject a pod waiting at Permit (ExternalPermit): an approver's answer.",
    ),
    (
        "receiveErrors",
        "receive",
        topology.ERRORS.name,
        None,
        "client",
        "Receive the reasons ksched refused input (bind a queue with `error.*`).",
    ),
    (
        "receiveDeadLetters",
        "receive",
        topology.DEAD_LETTERS.name,
        None,
        "operator",
        "Inspect poison messages and why they were rejected.",
    ),
    # every consumer, through its bus
    (
        "busSendDeadLetters",
        "send",
        topology.DEAD.name,
        None,
        "internal",
        "Dead-letter a poison message (any consumer, through its bus), with the reason.",
    ),
    # informer
    (
        "informerReceiveEvents",
        "receive",
        topology.INFORMER_EVENTS.name,
        None,
        "internal",
        "Validate, sequence and log every watch event, in arrival order.",
    ),
    (
        "informerReceiveBindings",
        "receive",
        topology.INFORMER_BINDINGS.name,
        None,
        "internal",
        "Record the Bindings of each binder batch in the event log.",
    ),
    (
        "informerSendCluster",
        "send",
        topology.CLUSTER.name,
        None,
        "internal",
        "Republish accepted log entries to every projection.",
    ),
    (
        "informerSendErrors",
        "send",
        topology.ERRORS.name,
        None,
        "internal",
        "Report an invalid event instead of crashing on it.",
    ),
    # queue
    (
        "queueReceiveCluster",
        "receive",
        topology.QUEUE_CLUSTER.name,
        None,
        "internal",
        "Move pods between activeQ, backoffQ and unschedulablePods on cluster events.",
    ),
    (
        "queueReceiveResults",
        "receive",
        topology.QUEUE_RESULTS.name,
        None,
        "internal",
        "Free in-flight slots; park, back off or forget each pod.",
    ),
    (
        "queueSendPodGroupStatus",
        "send",
        topology.DECISIONS.name,
        [PodGroup.__name__, SchedulingPodGroup.__name__],
        "internal",
        "Publish a PodGroup's status when its members change it.",
    ),
    (
        "queueSendPodStatus",
        "send",
        topology.DECISIONS.name,
        [PodStatusPatch.__name__, Event.__name__],
        "internal",
        "Publish the PodScheduled condition (and its NotReadyForScheduling Event) of a pod"
        " PreEnqueue held back for 5 s, or its clear (KEP-5501).",
    ),
    (
        "queueSendSchedule",
        "send",
        topology.SCHEDULE.name,
        None,
        "internal",
        "Hand the heads of activeQ to the scheduler replicas.",
    ),
    # scheduler
    (
        "schedulerReceiveRequests",
        "receive",
        topology.SCHEDULER_REQUESTS.name,
        None,
        "internal",
        "Run the scheduling cycle for each pod of the batch.",
    ),
    (
        "schedulerReceiveCluster",
        "receive",
        _REPLICA_FEED.name,
        None,
        "internal",
        "Keep this replica's snapshot up to date.",
    ),
    (
        "schedulerSendBind",
        "send",
        topology.BIND.name,
        None,
        "internal",
        "Ask a binder to bind pods assumed on their nodes.",
    ),
    (
        "schedulerSendResults",
        "send",
        topology.RESULTS.name,
        None,
        "internal",
        "Report unschedulable, failed or stale attempts.",
    ),
    (
        "schedulerSendDecisions",
        "send",
        topology.DECISIONS.name,
        [Event.__name__, WaitingPod.__name__, Preemption.__name__, NOMINATION],
        "internal",
        "Publish FailedScheduling and Preempted events, preemptions and nominations, and "
        "announce pods that wait at Permit.",
    ),
    # binder
    (
        "binderReceiveRequests",
        "receive",
        topology.BINDER_REQUESTS.name,
        None,
        "internal",
        "Bind pods (PreBind, Bind, PostBind) and fail those rejected at Permit.",
    ),
    (
        "binderReceivePermit",
        "receive",
        topology.BINDER_PERMIT.name,
        None,
        "internal",
        "Apply allow / reject decisions to the waiting pods (any binder replica).",
    ),
    (
        "binderSendErrors",
        "send",
        topology.ERRORS.name,
        None,
        "internal",
        "Report a permit decision for a pod that is not waiting at that plugin.",
    ),
    (
        "binderSendDecisions",
        "send",
        topology.DECISIONS.name,
        None,
        "internal",
        "Publish the Binding and its Scheduled event (FailedScheduling after a rejection),"
        " preceded by the pod's ResourceClaims' allocations (DynamicResources' PreBind) and,"
        " when PreBind created the pod's extended-resource claim, the pod's"
        " `status.extendedResourceClaimStatus` (a PodStatusPatch on `status.<namespace>`).",
    ),
    (
        "binderSendVolumeEvents",
        "send",
        topology.EVENTS.name,
        None,
        "internal",
        "PreBind: record the volumes and claims VolumeBinding bound, as watch events.",
    ),
    (
        "binderSendResults",
        "send",
        topology.RESULTS.name,
        None,
        "internal",
        "Report bound pods and binding-cycle failures.",
    ),
    (
        "binderSendBound",
        "send",
        topology.BOUND.name,
        None,
        "internal",
        "Hand the batch's Bindings to the informer, to be recorded in the event log.",
    ),
    # descheduler
    (
        "deschedulerSendDecisions",
        "send",
        topology.DECISIONS.name,
        [Eviction.__name__, Event.__name__],
        "internal",
        "Publish each eviction (a policy/v1 Eviction) and its Descheduled event.",
    ),
)


def _operations(channels: Mapping[str, JSON]) -> JSON:
    operations: JSON = {}
    for op_id, action, name, message_ids, tag, summary in _HOPS:
        cid = channel_id(name)
        ids = list(channels[cid]["messages"]) if message_ids is None else list(message_ids)
        operation: JSON = {
            "action": action,
            "channel": _ref(f"#/channels/{cid}"),
            "summary": summary,
            "tags": [{"name": tag}],
            "messages": [_ref(f"#/channels/{cid}/messages/{m}") for m in ids],
        }
        if action == "receive":
            operation["bindings"] = {"amqp": {"ack": True, "bindingVersion": AMQP_BINDING_VERSION}}
        operations[op_id] = operation
    return operations
