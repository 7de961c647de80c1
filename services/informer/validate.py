"""Turn one inbound delivery into a typed watch event, or an ErrorReport that names the
object and the field. Nothing here raises on bad input: every problem becomes a report.

Checks, in order: size, UTF-8, JSON nesting depth, routing key (``<kind>.<type>``), JSON,
envelope, object schema (types, required fields), then what the API server refuses in the
object (:mod:`services.informer.validation`: names, labels, annotations, limits,
quantities, PriorityClass values). Bounds are in :mod:`services.informer.limits`. Checks
that need the cluster's state (a pod bound to an unknown node) are the informer's.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import msgspec

from contracts.errors import ErrorReport
from contracts.events import EventType, WatchEvent
from contracts.k8s import ObjectMeta, Pod
from contracts.kinds import EVENT_TYPES, KINDS, NAMESPACED, KubeObject
from services.informer.limits import MAX_MESSAGE_BYTES, MAX_NESTING_DEPTH
from services.informer.validation import object_problems
from services.informer.validation.workload import drop_disabled_fields, gate_problem

__all__ = ["MAX_MESSAGE_BYTES", "Accepted", "default_uid", "object_key", "validate"]

_PATH = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]*)`")
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')
"""A JSON string literal (removed before counting brackets: they may hold brackets)."""
_MAX_READ_BYTES = 8 * MAX_MESSAGE_BYTES
"""Past this, an oversized message is refused without reading even its name."""
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class _Identity(msgspec.Struct, frozen=True):
    """Only the name and namespace: a bad label elsewhere must not hide the name."""

    name: str = ""
    namespace: str | None = None


class _Named(msgspec.Struct, frozen=True):
    metadata: _Identity = _Identity()


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
    """The JSON path and reason of a decode error; a missing field's path names it."""
    text = str(error)
    match = _PATH.search(text)
    path, reason = ("", text) if match is None else (match["path"], text[: match.start()])
    missing = _MISSING.match(reason)
    if missing is not None:
        path = f"{path}.{missing['name']}" if path else missing["name"]
    return path, reason


def nesting_depth(body: bytes) -> int:
    """How deep ``body``'s arrays and objects nest, brackets inside strings not counted.
    Bounded work (a few passes in C, one Python step per bracket), unlike a recursive
    decoder, which hostile nesting drives into RecursionError."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def validate(body: bytes, routing_key: str) -> Accepted | ErrorReport:
    kind, _, type_word = routing_key.partition(".")
    kind = kind.lower()
    problem, readable = _message_problem(body)

    def report(field: str, reason: str) -> ErrorReport:
        # The name is read only from a message the decoder can take without harm (and
        # only for a report: an accepted event needs no second decode).
        named = _identify(body.decode("utf-8", "replace").encode()) if readable else None
        name = named.name or None if named is not None else None
        namespace = named.namespace if named is not None else None
        if kind in NAMESPACED and name:
            namespace = namespace or "default"
        return ErrorReport(
            object_kind=kind or "unknown",
            namespace=namespace,
            name=name,
            field=field,
            reason=reason,
            routing_key=routing_key,
            excerpt=body[:200].decode("utf-8", "replace"),
        )

    if problem is not None:
        return report("", problem)
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as error:
            return report("", f"not UTF-8: byte {error.start} is invalid ({error.reason})")
    if kind not in KINDS:
        known = ", ".join(sorted(KINDS))
        return report("kind", f"unknown kind {kind!r} in routing key (known kinds: {known})")
    gated = gate_problem(kind)
    if gated is not None:
        return report("kind", gated)
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
    if isinstance(obj, Pod):
        obj = drop_disabled_fields(obj)
    problems = object_problems(kind, obj, deleted=envelope.type == "DELETED")
    if problems:
        field, reason = problems[0]
        return report(field, reason)
    meta = obj.metadata
    if kind in NAMESPACED and not meta.namespace:
        meta = msgspec.structs.replace(meta, namespace="default")
    if not meta.uid:
        meta = msgspec.structs.replace(meta, uid=default_uid(kind, meta))
    if meta is not obj.metadata:
        obj = msgspec.structs.replace(obj, metadata=meta)
    if envelope.type not in EVENT_TYPES:  # pragma: no cover - the Literal already checks
        return report("type", f"unknown event type {envelope.type!r}")
    return Accepted(kind=kind, type=envelope.type, object=obj)


def _message_problem(body: bytes) -> tuple[str | None, bool]:
    """Why ``body`` is refused before any decoding (its size, its nesting depth), and
    whether its name may still be read (the nesting is shallow enough to decode)."""
    if len(body) > _MAX_READ_BYTES:
        return f"message of {len(body)} bytes exceeds the limit of {MAX_MESSAGE_BYTES}", False
    # Cheap bound first: no deeper than it has opening brackets (strings included).
    shallow = body.count(b"[") + body.count(b"{") <= MAX_NESTING_DEPTH
    depth = 0 if shallow else nesting_depth(body)
    if depth > MAX_NESTING_DEPTH:
        return f"JSON nested {depth} levels deep exceeds the limit of {MAX_NESTING_DEPTH}", False
    if len(body) > MAX_MESSAGE_BYTES:
        return f"message of {len(body)} bytes exceeds the limit of {MAX_MESSAGE_BYTES}", True
    return None, True


def _identify(body: bytes) -> _Identity:
    """Best-effort name of the object, so even a broken event's report names it."""
    try:
        return _named_decoder.decode(body).object.metadata
    except msgspec.MsgspecError:
        return _Identity()
