"""The AsyncAPI 3.0.0 document of ksched, generated from the contracts.

Nothing here is written by hand twice: channels come from :mod:`contracts.topology`
(exchanges, queues, routing-key functions), schemas from the msgspec Structs via
:func:`msgspec.json.schema_components`. What this module adds is the part the code
cannot say by itself: which message travels where and who publishes or consumes it.

Reading the document:

- One channel per exchange (``is: routingKey``; the address is the routing key, with
  parameters where it varies) and one per queue (``is: queue``; the address is the queue
  name, the exchange bindings are under ``x-bindings``).
- Operations tagged ``client`` are what a ksched user does: publish watch events, receive
  decisions and errors. Operations tagged ``internal`` are the hops between ksched's own
  services (named after the service that performs them); users never publish there.
  ``operator`` operations are for whoever watches the dead letters.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from contracts import topology
from contracts.errors import ErrorReport
from contracts.events import ClusterBatch, WatchEvent
from contracts.k8s import Pod
from contracts.k8s.decisions import Binding, Decision, Event
from contracts.kinds import BINDING_KIND, BINDING_TYPE, EVENT_TYPES, KINDS
from contracts.messages import BindBatch, ResultBatch, ScheduleBatch

__all__ = ["ASYNCAPI_VERSION", "asyncapi_document", "channel_id"]

JSON = dict[str, Any]
Action = Literal["send", "receive"]

ASYNCAPI_VERSION: Final = "3.0.0"
AMQP_BINDING_VERSION: Final = "0.3.0"
SERVER: Final = "amqp"
SCHEMA_REF: Final = "#/components/schemas/{name}"
TRACE_HEADERS: Final[dict[str, str]] = {
    "traceparent": "W3C trace context of the span that published the message.",
    "tracestate": "W3C trace state, if any.",
}
"""AMQP headers every message may carry: the trace context of the publishing span."""

_WATCH_KINDS: Final[dict[str, type[Any]]] = {**KINDS, BINDING_KIND: BINDING_TYPE}
"""Every kind a user may publish on ``ksched.events`` (routing-key kind → struct)."""

_DEAD_LETTER: Final = "DeadLetter"

_EXAMPLE_POD_EVENT: Final[JSON] = {
    "type": "ADDED",
    "object": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx", "namespace": "default", "uid": "4d1f2c36"},
        "spec": {
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": "nginx",
                    "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    },
}


def asyncapi_document() -> JSON:
    """The AsyncAPI 3.0.0 document as a JSON-serialisable dict."""
    refs, schemas = _schemas()
    messages = _messages(refs)
    channels = _channels(messages)
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": {
            "title": "ksched",
            "version": _version(),
            "description": _INFO,
            "license": {"name": "Apache-2.0"},
        },
        "defaultContentType": "application/json",
        "servers": {
            SERVER: {
                "host": "127.0.0.1:5672",
                "protocol": "amqp",
                "protocolVersion": "0.9.1",
                "description": "RabbitMQ (compose.yaml publishes it on this port).",
            }
        },
        "channels": channels,
        "operations": _operations(channels),
        "components": {"schemas": schemas, "messages": messages},
    }


_INFO = """\
kube-scheduler rebuilt as asyncio services over RabbitMQ and Redis.

Publish Kubernetes watch events (`{"type": "ADDED", "object": <Pod JSON>}`) on
`ksched.events` with routing key `<kind>.<type>` (`pod.added`); receive Bindings and
Events on `ksched.decisions` (`binding.<namespace>`, `event.<namespace>`) and rejected
input on `ksched.errors` (`error.<kind>`).

Objects are Kubernetes-shaped: camelCase, unknown fields ignored, resource quantities
(`100m`, `1Gi`) as strings or numbers. Trace context travels in the `traceparent` and
`tracestate` AMQP headers. Internal hops carry batches, one message per "whatever is
ready now".

Operations tagged `client` are what a user does; `internal` ones document the hops
between ksched's services, named after the service that performs them."""


def _version() -> str:
    try:
        return importlib.metadata.version("ksched")
    except importlib.metadata.PackageNotFoundError:
        return "0.1.0"


# --- schemas -------------------------------------------------------------------------


def _top_level_types() -> list[type[Any]]:
    """Every type a message carries at its top level (the rest are reached from these)."""
    batches: list[type[Any]] = [ClusterBatch, ScheduleBatch, BindBatch, ResultBatch]
    decisions: list[type[Any]] = [Binding, Event]
    return [WatchEvent, *_WATCH_KINDS.values(), *batches, *decisions, ErrorReport]


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
        {topology.REASON_HEADER: "Why the message was rejected."}
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
        ScheduleBatch: "Scheduling attempts the queue hands to any scheduler replica.",
        BindBatch: "Bind requests from a scheduler to any binder replica.",
        ResultBatch: "How attempts ended, back to the queue (frees in-flight slots).",
        Binding: "v1 Binding: the pod in metadata is bound to the Node in target.",
        Event: "v1 Event about a pod (Scheduled, FailedScheduling, Preempted).",
        ErrorReport: "Why an inbound message was refused, naming the object and field.",
    }
    for struct, summary in summaries.items():
        messages[struct.__name__] = _message(struct.__name__, refs[struct], summary)
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
    topology.DECISIONS.name: [Binding.__name__, Event.__name__],
    topology.ERRORS.name: [ErrorReport.__name__],
    topology.DEAD.name: [_DEAD_LETTER],
}


# --- channels ------------------------------------------------------------------------


def channel_id(name: str) -> str:
    """The channel id of an exchange or queue name: ``ksched.queue.cluster`` → ``queue_cluster``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name.removeprefix("ksched.")).strip("_")


_REPLICA_FEED: Final = topology.scheduler_cluster_queue("{replica}")


def _queues() -> tuple[topology.QueueSpec, ...]:
    return (*topology.QUEUES, _REPLICA_FEED)


def _address(exchange: topology.ExchangeSpec) -> tuple[str, JSON]:
    """The routing key publishers use on ``exchange``, and its parameters."""
    if exchange is topology.EVENTS:
        return topology.event_key("{kind}", "{type}"), {
            "kind": {
                "enum": list(_WATCH_KINDS),
                "description": "The object's kind, lower case.",
            },
            "type": {
                "enum": [t.lower() for t in EVENT_TYPES],
                "description": "The watch event type, lower case.",
            },
        }
    if exchange is topology.DECISIONS:
        kinds = [t.__name__.lower() for t in _union_members(Decision)]
        return topology.decision_key("{kind}", "{namespace}"), {
            "kind": {"enum": kinds, "description": "The decision's kind, lower case."},
            "namespace": {
                "description": "The pod's namespace (`default` when unset).",
                "examples": ["default", "kube-system"],
            },
        }
    if exchange is topology.ERRORS:
        return topology.error_key("{kind}"), {
            "kind": {
                "description": "The refused object's kind, lower case (`unknown` if unsure).",
                "examples": [*_WATCH_KINDS, "unknown"],
            }
        }
    if exchange.type == "fanout":
        return "", {}
    # A direct exchange: publishers use exactly the key its queues are bound with.
    keys = sorted(
        {b.routing_key for q in _queues() for b in q.bindings if b.exchange == exchange.name}
    )
    if len(keys) != 1:
        raise ValueError(f"{exchange.name}: cannot tell its routing key from {keys}")
    return keys[0], {}


def _union_members(union: Any) -> tuple[type[Any], ...]:
    return tuple(getattr(union, "__args__", (union,)))


def _channel_messages(ids: Iterable[str]) -> JSON:
    return {m: _ref(f"#/components/messages/{m}") for m in ids}


def _exchange_channel(exchange: topology.ExchangeSpec) -> JSON:
    address, parameters = _address(exchange)
    description = exchange.description
    if exchange.type == "fanout":
        description += " Fanout: the routing key is ignored."
    channel: JSON = {
        "address": address,
        "title": exchange.name,
        "description": description,
        "servers": [_ref(f"#/servers/{SERVER}")],
        "messages": _channel_messages(_EXCHANGE_MESSAGES[exchange.name]),
        "bindings": {
            "amqp": {
                "is": "routingKey",
                "exchange": {
                    "name": exchange.name,
                    "type": exchange.type,
                    "durable": exchange.durable,
                    "autoDelete": False,
                    "vhost": "/",
                },
                "bindingVersion": AMQP_BINDING_VERSION,
            }
        },
    }
    if parameters:
        channel["parameters"] = parameters
    return channel


def _queue_channel(queue: topology.QueueSpec) -> JSON:
    amqp: JSON = {
        "is": "queue",
        "queue": {
            "name": queue.name,
            "durable": queue.durable,
            "exclusive": queue.exclusive,
            "autoDelete": queue.auto_delete,
            "vhost": "/",
        },
        "x-bindings": [
            {"exchange": b.exchange, "routingKey": b.routing_key} for b in queue.bindings
        ],
        "bindingVersion": AMQP_BINDING_VERSION,
    }
    if queue.dead_letter:
        amqp["x-deadLetterExchange"] = topology.DEAD.name
    if queue.arguments:
        amqp["x-arguments"] = dict(queue.arguments)
    bound = ", ".join(
        f"`{b.exchange}`" + (f" with `{b.routing_key}`" if b.routing_key else "")
        for b in queue.bindings
    )
    channel: JSON = {
        "address": queue.name,
        "title": queue.name,
        "description": f"{queue.description} Bound to {bound}.",
        "servers": [_ref(f"#/servers/{SERVER}")],
        "messages": _channel_messages(_payload_messages(queue.payload)),
        "bindings": {"amqp": amqp},
    }
    if queue is _REPLICA_FEED:
        channel["parameters"] = {
            "replica": {"description": "The scheduler replica's id (unique per process)."}
        }
    return channel


def _channels(messages: Mapping[str, JSON]) -> JSON:
    channels: JSON = {}
    specs: list[tuple[str, JSON]] = [
        *((e.name, _exchange_channel(e)) for e in topology.EXCHANGES),
        *((q.name, _queue_channel(q)) for q in _queues()),
    ]
    for name, channel in specs:
        cid = channel_id(name)
        if cid in channels:
            raise ValueError(f"two channels would be called {cid!r}")
        unknown = set(channel["messages"]) - set(messages)
        if unknown:
            raise ValueError(f"{name}: no message called {sorted(unknown)}")
        channels[cid] = channel
    return channels


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
        "Receive Bindings and Events (bind a queue with `binding.*`, `event.<ns>` or `#`).",
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
        "Record published Bindings in the event log.",
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
        [Event.__name__],
        "internal",
        "Publish FailedScheduling and Preempted events.",
    ),
    # binder
    (
        "binderReceiveRequests",
        "receive",
        topology.BINDER_REQUESTS.name,
        None,
        "internal",
        "Run Permit waits, PreBind, Bind and PostBind.",
    ),
    (
        "binderSendDecisions",
        "send",
        topology.DECISIONS.name,
        None,
        "internal",
        "Publish the Binding and its Scheduled event.",
    ),
    (
        "binderSendResults",
        "send",
        topology.RESULTS.name,
        None,
        "internal",
        "Report bound pods and binding-cycle failures.",
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
