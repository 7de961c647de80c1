"""Channels: one per exchange and one per queue, from contracts.topology."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from contracts import topology
from contracts.asyncapi._base import _WATCH_KINDS, AMQP_BINDING_VERSION, JSON, SERVER
from contracts.asyncapi.messages import _EXCHANGE_MESSAGES, _payload_messages, _ref
from contracts.k8s.decisions import Decision
from contracts.kinds import EVENT_TYPES

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
    if exchange is topology.PERMIT:
        return "{verdict}.{namespace}", {
            "verdict": {"enum": ["allow", "reject"], "description": "Allow or reject."},
            "namespace": {
                "description": "The waiting pod's namespace.",
                "examples": ["default"],
            },
        }
    if exchange is topology.DECISIONS:
        kinds = [t.__name__.lower() for t in _union_members(Decision)] + [
            "waiting",
            "podgroup",
            "status",
            topology.CLAIM_DECISION,
            "preemption",
            "nomination",
        ]
        return topology.decision_key("{kind}", "{namespace}"), {
            "kind": {"enum": kinds, "description": "The decision's kind, lower case."},
            "namespace": {
                "description": "The pod's namespace (`default` when unset).",
                "examples": ["default", "kube-system"],
            },
        }
    if exchange is topology.ERRORS:
        return topology.ERROR_KEY_PREFIX + "{kind}", {
            "kind": {
                "description": "The refused object's kind, lower case (`unknown` if unsure, "
                "or if the routing key's kind is not one word of letters and digits).",
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
