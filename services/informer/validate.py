"""Turn one inbound delivery into a typed watch event, or an ErrorReport that names the
object and the field. Nothing here raises on bad input: every problem becomes a report.

Checks, in order: size, routing key (``<kind>.<type>``), JSON, envelope, object schema
(types, required fields), metadata.name, resource quantities. Checks that need the
cluster's state (a pod bound to an unknown node) are the informer's, not this module's.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import msgspec

from contracts.errors import ErrorReport
from contracts.events import EventType, WatchEvent
from contracts.k8s import Node, ObjectMeta, Pod
from contracts.kinds import EVENT_TYPES, KINDS, NAMESPACED, KubeObject
from services.common.resources import validate_node, validate_pod

MAX_MESSAGE_BYTES = 1_048_576
"""Larger messages are refused, as the API server refuses objects past etcd's limit."""

_PATH = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")


class _Named(msgspec.Struct, frozen=True):
    metadata: ObjectMeta = ObjectMeta()


class _NamedEnvelope(msgspec.Struct, frozen=True):
    object: _Named = _Named()


_envelope_decoder = msgspec.json.Decoder(WatchEvent)
_named_decoder = msgspec.json.Decoder(_NamedEnvelope)
_object_decoders = {kind: msgspec.json.Decoder(cls) for kind, cls in KINDS.items()}


@dataclass(frozen=True, slots=True)
class Accepted:
    kind: str
    type: EventType
    object: KubeObject

    @property
    def key(self) -> str:
        return object_key(self.kind, self.object.metadata)


def object_key(kind: str, meta: ObjectMeta) -> str:
    """How the store and every projection key an object: ``ns/name`` or ``name``."""
    return f"{meta.namespace or 'default'}/{meta.name}" if kind in NAMESPACED else meta.name


def default_uid(kind: str, meta: ObjectMeta) -> str:
    """A stable uid for objects published without one (hand-written YAML usually has none)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ksched:{kind}:{object_key(kind, meta)}"))


def _field(error: msgspec.MsgspecError) -> tuple[str, str]:
    text = str(error)
    match = _PATH.search(text)
    if match is None:
        return "", text
    return match["path"], text[: match.start()]


def validate(body: bytes, routing_key: str) -> Accepted | ErrorReport:
    kind, _, type_word = routing_key.partition(".")
    kind = kind.lower()
    named = _identify(body)
    name = named.name or None
    namespace = (named.namespace or "default") if kind in NAMESPACED and name else named.namespace

    def report(field: str, reason: str) -> ErrorReport:
        return ErrorReport(
            object_kind=kind or "unknown",
            namespace=namespace,
            name=name,
            field=field,
            reason=reason,
            routing_key=routing_key,
            excerpt=body[:200].decode("utf-8", "replace"),
        )

    if len(body) > MAX_MESSAGE_BYTES:
        return report("", f"message of {len(body)} bytes exceeds the limit of {MAX_MESSAGE_BYTES}")
    if kind not in KINDS:
        known = ", ".join(sorted(KINDS))
        return report("kind", f"unknown kind {kind!r} in routing key (known kinds: {known})")
    try:
        envelope = _envelope_decoder.decode(body)
    except msgspec.DecodeError as error:
        field, reason = _field(error)
        return report(field, f"malformed watch event: {reason}")
    if type_word and type_word.upper() != envelope.type:
        return report(
            "type", f"routing key says {type_word!r} but the event type is {envelope.type}"
        )
    try:
        obj = _object_decoders[kind].decode(envelope.object)
    except msgspec.DecodeError as error:
        field, reason = _field(error)
        return report(field, reason)
    meta = obj.metadata
    if not meta.name:
        return report("metadata.name", "is required")
    if kind in NAMESPACED and not meta.namespace:
        meta = msgspec.structs.replace(meta, namespace="default")
    if not meta.uid:
        meta = msgspec.structs.replace(meta, uid=default_uid(kind, meta))
    if meta is not obj.metadata:
        obj = msgspec.structs.replace(obj, metadata=meta)
    if envelope.type != "DELETED":
        problems: list[tuple[str, str]] = []
        if isinstance(obj, Pod):
            problems = validate_pod(obj)
        elif isinstance(obj, Node):
            problems = validate_node(obj)
        if problems:
            field, reason = problems[0]
            return report(field, reason)
    if envelope.type not in EVENT_TYPES:  # pragma: no cover - the Literal already checks
        return report("type", f"unknown event type {envelope.type!r}")
    return Accepted(kind=kind, type=envelope.type, object=obj)


@dataclass(frozen=True, slots=True)
class _Identity:
    name: str
    namespace: str | None


def _identify(body: bytes) -> _Identity:
    """Best-effort name of the object, so even a broken event's report names it."""
    try:
        meta = _named_decoder.decode(body).object.metadata
    except msgspec.MsgspecError:
        return _Identity("", None)
    return _Identity(meta.name, meta.namespace)
