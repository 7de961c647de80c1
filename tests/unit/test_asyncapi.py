"""The AsyncAPI document covers every exchange, queue and contract type, and hangs together."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

import contracts.errors
import contracts.events
import contracts.k8s.decisions
import contracts.messages
import contracts.permit
import contracts.podstatus
from contracts import topology
from contracts.asyncapi import asyncapi_document, channel_id
from contracts.events import WatchEvent
from contracts.kinds import BINDING_KIND, BINDING_TYPE, KINDS
from contracts.permit import permit_key

DOC = asyncapi_document()
SCHEMAS: dict[str, Any] = DOC["components"]["schemas"]
MESSAGES: dict[str, Any] = DOC["components"]["messages"]
REPLICA_FEED = topology.scheduler_cluster_queue("{replica}")


def _structs_defined_in(module: ModuleType) -> list[type[msgspec.Struct]]:
    return [
        obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj)
        and issubclass(obj, msgspec.Struct)
        and obj.__module__ == module.__name__
        and not name.startswith("_")
    ]


CONTRACT_TYPES: list[type[Any]] = list(
    dict.fromkeys(
        [
            *_structs_defined_in(contracts.k8s.decisions),
            *_structs_defined_in(contracts.events),
            *_structs_defined_in(contracts.messages),
            *_structs_defined_in(contracts.errors),
            *KINDS.values(),
        ]
    )
)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _resolve(ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = DOC
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and part in node, f"{ref} does not resolve"
        node = node[part]
    return node


def _schema_name(ref: str) -> str:
    prefix = "#/components/schemas/"
    assert ref.startswith(prefix), ref
    return ref.removeprefix(prefix)


def _reachable_schemas(node: Any) -> set[str]:
    """Schema names referenced from ``node``, following schema references transitively."""
    seen: set[str] = set()
    todo = [_schema_name(r) for r in _refs(node) if r.startswith("#/components/schemas/")]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_schema_name(r) for r in _refs(SCHEMAS[name]))
    return seen


def test_document_is_asyncapi_3_and_plain_json() -> None:
    assert DOC["asyncapi"] == "3.0.0"
    assert json.loads(json.dumps(DOC)) == DOC
    assert DOC["info"]["title"] == "ksched"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", DOC["info"]["version"])
    assert DOC["servers"]["amqp"]["host"] == "127.0.0.1:5672"
    assert DOC["servers"]["amqp"]["protocol"] == "amqp"


def test_the_document_is_deterministic() -> None:
    assert json.dumps(asyncapi_document()) == json.dumps(DOC)


GOLDEN = Path(__file__).parents[2] / "contracts" / "asyncapi" / "asyncapi.json"
"""The checked-in document: what ``ksched asyncapi`` prints, byte for byte."""
REGENERATE = f".venv/bin/ksched asyncapi > {GOLDEN.relative_to(GOLDEN.parents[2])}"
"""The one command that rewrites the golden document after a deliberate contract change."""


def _ksched_asyncapi(hash_seed: str) -> bytes:
    """``ksched asyncapi``'s standard output, in a fresh interpreter with ``hash_seed``."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    run = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "asyncapi"],
        env=env,
        capture_output=True,
        check=True,
        cwd=GOLDEN.parents[2],
        timeout=60,
    )
    return run.stdout


@pytest.mark.parametrize("hash_seed", ["0", "1"])
def test_ksched_asyncapi_prints_the_golden_document(hash_seed: str) -> None:
    """Byte for byte, under two hash seeds: an order that follows a set's or a str
    hash shows up here as a difference."""
    printed = _ksched_asyncapi(hash_seed)
    assert printed == GOLDEN.read_bytes(), (
        f"ksched asyncapi (PYTHONHASHSEED={hash_seed}) differs from {GOLDEN}; if the change "
        f"is deliberate, regenerate it with: {REGENERATE}"
    )


def test_every_ref_resolves() -> None:
    refs = list(_refs(DOC))
    referenced = {"/".join(ref.split("/")[:3]) for ref in refs}
    # Operations name channels and their servers, channels name messages, messages name
    # payload schemas: a document (or a _refs) that yields none of these checks nothing.
    assert {"#/components/schemas", "#/components/messages", "#/servers/amqp"} <= referenced
    assert any(ref.startswith("#/channels/") for ref in refs)
    for ref in refs:
        _resolve(ref)


@pytest.mark.parametrize(
    "ref",
    ["#/components/schemas/NoSuchStruct", "#/channels/nowhere", "#/components/messages/x/y"],
)
def test_a_dangling_ref_does_not_resolve(ref: str) -> None:
    with pytest.raises(AssertionError, match="does not resolve"):
        _resolve(ref)


@pytest.mark.parametrize("exchange", topology.EXCHANGES, ids=lambda e: e.name)
def test_every_exchange_is_a_channel(exchange: topology.ExchangeSpec) -> None:
    channel = DOC["channels"][channel_id(exchange.name)]
    amqp = channel["bindings"]["amqp"]
    assert amqp["is"] == "routingKey"
    assert amqp["exchange"]["name"] == exchange.name
    assert amqp["exchange"]["type"] == exchange.type
    assert amqp["exchange"]["durable"] == exchange.durable
    assert channel["messages"], f"{exchange.name} carries no message"


@pytest.mark.parametrize("queue", [*topology.QUEUES, REPLICA_FEED], ids=lambda q: q.name)
def test_every_queue_is_a_channel_with_its_bindings(queue: topology.QueueSpec) -> None:
    channel = DOC["channels"][channel_id(queue.name)]
    assert channel["address"] == queue.name
    amqp = channel["bindings"]["amqp"]
    assert amqp["is"] == "queue"
    assert amqp["queue"] == {
        "name": queue.name,
        "durable": queue.durable,
        "exclusive": queue.exclusive,
        "autoDelete": queue.auto_delete,
        "vhost": "/",
    }
    assert amqp["x-bindings"] == [
        {"exchange": b.exchange, "routingKey": b.routing_key} for b in queue.bindings
    ]
    # A queue only ever holds what the exchanges it is bound to carry.
    for binding in queue.bindings:
        exchange_channel = DOC["channels"][channel_id(binding.exchange)]
        assert set(channel["messages"]) <= set(exchange_channel["messages"])


def test_channels_have_an_address_and_declare_its_parameters() -> None:
    for cid, channel in DOC["channels"].items():
        assert isinstance(channel.get("address"), str), cid
        placeholders = set(re.findall(r"\{([^}]+)\}", channel["address"]))
        assert placeholders == set(channel.get("parameters", {})), cid
        for message_id, message in channel["messages"].items():
            assert _resolve(message["$ref"]) is MESSAGES[message_id]


def _matches(address: str, key: str) -> bool:
    pattern = re.sub(r"\\\{[^}]+\\\}", r"[^.]+", re.escape(address))
    return re.fullmatch(pattern, key) is not None


def test_routing_keys_are_documented_per_channel() -> None:
    channels = DOC["channels"]
    events = channels[channel_id(topology.EVENTS.name)]
    assert events["address"] == "{kind}.{type}"
    assert set(events["parameters"]["kind"]["enum"]) == {*KINDS, BINDING_KIND}
    assert events["parameters"]["type"]["enum"] == ["added", "modified", "deleted"]
    assert _matches(events["address"], topology.event_key("Pod", "ADDED"))

    decisions = channels[channel_id(topology.DECISIONS.name)]
    assert decisions["address"] == "{kind}.{namespace}"
    assert set(decisions["parameters"]["kind"]["enum"]) == {
        "binding",
        "event",
        "waiting",
        "podgroup",
        "status",
        "claim",
        "preemption",
        "nomination",
    }
    assert _matches(decisions["address"], topology.decision_key("waiting", "team-a"))
    assert _matches(decisions["address"], topology.decision_key(topology.CLAIM_DECISION, "ml"))
    assert _matches(decisions["address"], topology.decision_key("status", "team-a"))
    assert _matches(decisions["address"], topology.decision_key("preemption", "team-a"))

    permit = channels[channel_id(topology.PERMIT.name)]
    assert permit["address"] == "{verdict}.{namespace}"
    assert _matches(permit["address"], permit_key("allow", "default"))
    assert _matches(permit["address"], permit_key("reject", "team-a"))
    assert _matches(decisions["address"], topology.decision_key("Binding", "default"))

    errors = channels[channel_id(topology.ERRORS.name)]
    assert errors["address"] == "error.{kind}"
    assert _matches(errors["address"], topology.error_key("Pod"))

    for exchange, key in [
        (topology.SCHEDULE, topology.SCHEDULE_KEY),
        (topology.BIND, topology.BIND_KEY),
        (topology.RESULTS, topology.RESULTS_KEY),
    ]:
        assert channels[channel_id(exchange.name)]["address"] == key


def test_operations_reference_existing_channels_and_their_messages() -> None:
    assert DOC["operations"]
    for op_id, operation in DOC["operations"].items():
        assert operation["action"] in {"send", "receive"}, op_id
        channel_ref = operation["channel"]["$ref"]
        assert channel_ref.startswith("#/channels/"), op_id
        channel = _resolve(channel_ref)
        assert operation["messages"], op_id
        for message in operation["messages"]:
            assert message["$ref"].startswith(f"{channel_ref}/messages/"), op_id
            _resolve(message["$ref"])
        assert channel["messages"], op_id


def test_a_claims_allocation_is_a_resource_claim_on_the_decisions_channel() -> None:
    channel = DOC["channels"][channel_id(topology.DECISIONS.name)]
    message = _resolve(channel["messages"]["ClaimAllocation"]["$ref"])
    assert message["payload"]["$ref"].endswith("/ResourceClaim")
    assert "claim.<namespace>" in message["summary"] + message.get("description", "")


def _operations_on(name: str, action: str) -> list[str]:
    ref = f"#/channels/{channel_id(name)}"
    return [
        op_id
        for op_id, op in DOC["operations"].items()
        if op["channel"]["$ref"] == ref and op["action"] == action
    ]


def test_user_facing_operations() -> None:
    client = {
        op_id: op
        for op_id, op in DOC["operations"].items()
        if {"name": "client"} in op.get("tags", [])
    }
    by_channel = {(op["channel"]["$ref"], op["action"]) for op in client.values()}
    assert (f"#/channels/{channel_id(topology.EVENTS.name)}", "send") in by_channel
    assert (f"#/channels/{channel_id(topology.DECISIONS.name)}", "receive") in by_channel
    assert (f"#/channels/{channel_id(topology.ERRORS.name)}", "receive") in by_channel


def test_every_hop_has_a_publisher_and_a_consumer() -> None:
    for exchange in topology.EXCHANGES:
        assert _operations_on(exchange.name, "send"), f"nobody publishes on {exchange.name}"
    for queue in [*topology.QUEUES, REPLICA_FEED]:
        assert _operations_on(queue.name, "receive"), f"nobody consumes {queue.name}"


@pytest.mark.parametrize("struct", CONTRACT_TYPES, ids=lambda t: t.__name__)
def test_every_contract_type_has_a_schema_used_by_a_message(struct: type[Any]) -> None:
    assert struct.__name__ in SCHEMAS
    reachable = set().union(*(_reachable_schemas(m["payload"]) for m in MESSAGES.values()))
    assert struct.__name__ in reachable, f"no message carries {struct.__name__}"


@pytest.mark.parametrize(
    "struct",
    [
        WatchEvent,
        *KINDS.values(),
        BINDING_TYPE,
        contracts.events.ClusterBatch,
        contracts.messages.ScheduleBatch,
        contracts.messages.BindBatch,
        contracts.messages.ResultBatch,
        contracts.k8s.decisions.Binding,
        contracts.k8s.decisions.Event,
        contracts.permit.WaitingPod,
        contracts.permit.PermitDecision,
        contracts.podstatus.PodStatusPatch,
        contracts.errors.ErrorReport,
    ],
    ids=lambda t: t.__name__,
)
def test_top_level_types_are_a_message_payload(struct: type[Any]) -> None:
    ref = f"#/components/schemas/{struct.__name__}"
    assert any(ref in set(_refs(m["payload"])) for m in MESSAGES.values())


def test_watch_event_object_is_a_kubernetes_object() -> None:
    watch = SCHEMAS["WatchEvent"]
    assert watch["properties"]["object"]["type"] == "object"
    assert set(watch["required"]) == {"type", "object"}
    for kind, struct in {**KINDS, BINDING_KIND: BINDING_TYPE}.items():
        message = MESSAGES[f"{struct.__name__}WatchEvent"]
        refs = set(_refs(message["payload"]))
        assert refs == {
            "#/components/schemas/WatchEvent",
            f"#/components/schemas/{struct.__name__}",
        }, kind


def test_schemas_use_asyncapi_discriminators() -> None:
    def discriminators(node: Any) -> Iterator[Any]:
        if isinstance(node, dict):
            if "discriminator" in node:
                yield node["discriminator"]
            for value in node.values():
                yield from discriminators(value)
        elif isinstance(node, list):
            for value in node:
                yield from discriminators(value)

    found = list(discriminators(SCHEMAS))
    assert found, "the tagged unions should keep their discriminator"
    assert all(isinstance(d, str) for d in found)


def test_examples_decode_with_the_contract_types() -> None:
    examples = [
        (message_id, example)
        for message_id, message in MESSAGES.items()
        for example in message.get("examples", [])
    ]
    assert examples
    structs = {f"{s.__name__}WatchEvent": s for s in [*KINDS.values(), BINDING_TYPE]}
    for message_id, example in examples:
        body = json.dumps(example["payload"]).encode()
        event = msgspec.json.decode(body, type=WatchEvent)
        msgspec.json.decode(event.object, type=structs[message_id])
