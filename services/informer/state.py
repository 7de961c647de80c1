"""The informer's own view of the cluster: what it has accepted, to make handling idempotent.

Reconcile rules for an accepted watch event against the current object:

- DELETED of an unknown object, or an event identical to what is stored: a duplicate,
  nothing happens.
- An older ``resourceVersion`` than the stored one (both numeric): stale, nothing happens.
- ADDED of a known object is a MODIFIED, MODIFIED of an unknown one an ADDED (a relist).
- ``spec.nodeName`` is sticky, as in the API server: once ksched has bound a pod, a late
  copy of its pending version (a redelivery, a replayed watch) keeps the node.

The view also indexes every live object by ``metadata.uid`` (:meth:`ClusterObjects.uid_owner`),
so the informer can refuse a different object that arrives with a uid already in use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from contracts.events import EventType
from contracts.k8s import Pod
from contracts.kinds import KINDS, KubeObject

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class Change:
    kind: str
    key: str
    type: EventType
    object: KubeObject


def _version(obj: KubeObject) -> int | None:
    text = obj.metadata.resource_version
    return int(text) if text is not None and text.isdigit() else None


class ClusterObjects:
    """Objects by kind and key, with the bytes they were stored as."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, KubeObject]] = {kind: {} for kind in KINDS}
        self._bytes: dict[str, dict[str, bytes]] = {kind: {} for kind in KINDS}
        self._uids: dict[str, tuple[str, str]] = {}
        """uid → (kind, key) of the live object that has it."""

    def uid_owner(self, uid: str) -> tuple[str, str] | None:
        """The (kind, key) of the live object with this uid, if any."""
        return self._uids.get(uid)

    def _index(self, kind: str, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if old is not None and self._uids.get(old.metadata.uid) == (kind, key):
            del self._uids[old.metadata.uid]
        if new is not None:
            self._uids[new.metadata.uid] = (kind, key)

    def get(self, kind: str, key: str) -> KubeObject | None:
        return self._objects[kind].get(key)

    def has_node(self, name: str) -> bool:
        return name in self._objects["node"]

    def load(self, kind: str, items: Iterable[tuple[str, KubeObject]]) -> None:
        for key, obj in items:
            self._index(kind, key, self._objects[kind].get(key), obj)
            self._objects[kind][key] = obj
            self._bytes[kind][key] = _encoder.encode(obj)

    def count(self, kind: str) -> int:
        return len(self._objects[kind])

    def reconcile(self, kind: str, key: str, type_: EventType, obj: KubeObject) -> Change | None:
        """The change ``obj`` makes, already applied to this view; None if it makes none."""
        current = self._objects[kind].get(key)
        if type_ == "DELETED":
            if current is None:
                return None
            del self._objects[kind][key]
            del self._bytes[kind][key]
            self._index(kind, key, current, None)
            return Change(kind, key, "DELETED", current)
        if current is not None:
            obj = _keep_binding(current, obj)
            old, new = _version(current), _version(obj)
            if old is not None and new is not None and new < old:
                return None
        encoded = _encoder.encode(obj)
        if current is not None and encoded == self._bytes[kind][key]:
            return None
        self._objects[kind][key] = obj
        self._bytes[kind][key] = encoded
        self._index(kind, key, current, obj)
        return Change(kind, key, "ADDED" if current is None else "MODIFIED", obj)


def _keep_binding(current: KubeObject, incoming: KubeObject) -> KubeObject:
    if (
        isinstance(current, Pod)
        and isinstance(incoming, Pod)
        and current.spec.node_name
        and not incoming.spec.node_name
        and current.metadata.uid == incoming.metadata.uid
    ):
        spec = msgspec.structs.replace(incoming.spec, node_name=current.spec.node_name)
        return msgspec.structs.replace(incoming, spec=spec)
    return incoming
