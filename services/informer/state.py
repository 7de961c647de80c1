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

A batch is reconciled against a :class:`Staged` overlay, never against the view itself::

    staged = objects.stage()        # reads see the view plus this batch's changes
    staged.reconcile(...)           # ... once per event of the batch
    <append to the log, apply to the store>
    objects.commit(staged)          # only now does the view change

If the log append or the store apply fails, the overlay is dropped: the view is what is
durable, so a redelivered event is reconciled again instead of being taken as a duplicate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import msgspec

from contracts.events import EventType, Origin
from contracts.k8s import Pod
from contracts.kinds import KINDS, KubeObject

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class Change:
    kind: str
    key: str
    type: EventType
    object: KubeObject
    encoded: bytes
    """``object`` as JSON, encoded once when the change was staged and reused for the
    log, the store and the batch (services.common.eventlog.encoded)."""
    origin: Origin | None = None
    """Who made it, when not the batch's origin (``controller``: see
    :mod:`services.informer.claims`)."""


def _version(obj: KubeObject) -> int | None:
    text = obj.metadata.resource_version
    return int(text) if text is not None and text.isdigit() else None


def controller_uid(obj: KubeObject) -> str | None:
    """The uid of the object's controlling owner, if any."""
    for owner in obj.metadata.owner_references:
        if owner.controller:
            return owner.uid
    return None


class ClusterObjects:
    """Objects by kind and key, with the bytes they were stored as."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, KubeObject]] = {kind: {} for kind in KINDS}
        self._bytes: dict[str, dict[str, bytes]] = {kind: {} for kind in KINDS}
        self._uids: dict[str, tuple[str, str]] = {}
        """uid → (kind, key) of the live object that has it."""
        self._owned: dict[str, set[str]] = {}
        """Controller uid → keys of the ResourceClaims it controls (the claim
        controller's ``claimPodOwnerIndex``)."""

    def uid_owner(self, uid: str) -> tuple[str, str] | None:
        """The (kind, key) of the live object with this uid, if any."""
        return self._uids.get(uid)

    def _index(self, kind: str, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if old is not None and self._uids.get(old.metadata.uid) == (kind, key):
            del self._uids[old.metadata.uid]
        if new is not None:
            self._uids[new.metadata.uid] = (kind, key)
        if kind == "resourceclaim":
            if old is not None and (owner := controller_uid(old)) is not None:
                keys = self._owned.get(owner)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._owned[owner]
            if new is not None and (owner := controller_uid(new)) is not None:
                self._owned.setdefault(owner, set()).add(key)

    def get(self, kind: str, key: str) -> KubeObject | None:
        return self._objects[kind].get(key)

    def has_node(self, name: str) -> bool:
        return name in self._objects["node"]

    def values(self, kind: str) -> Iterator[KubeObject]:
        return iter(self._objects[kind].values())

    def load(self, kind: str, items: Iterable[tuple[str, KubeObject]]) -> None:
        for key, obj in items:
            self._index(kind, key, self._objects[kind].get(key), obj)
            self._objects[kind][key] = obj
            self._bytes[kind][key] = _encoder.encode(obj)

    def count(self, kind: str) -> int:
        return len(self._objects[kind])

    def stage(self) -> Staged:
        """An overlay to reconcile a batch against; see :meth:`commit`."""
        return Staged(self)

    def commit(self, staged: Staged) -> None:
        """Apply the changes of ``staged`` (made against this view), in order."""
        if staged.base is not self:
            raise ValueError("the staged changes were made against another view")
        for change in staged.changes:
            kind, key = change.kind, change.key
            current = self._objects[kind].get(key)
            if change.type == "DELETED":
                self._objects[kind].pop(key, None)
                self._bytes[kind].pop(key, None)
                self._index(kind, key, current, None)
            else:
                self._objects[kind][key] = change.object
                self._bytes[kind][key] = staged.encoded(kind, key)
                self._index(kind, key, current, change.object)
        staged.changes.clear()

    def reconcile(self, kind: str, key: str, type_: EventType, obj: KubeObject) -> Change | None:
        """The change ``obj`` makes, applied to this view at once; None if it makes none."""
        staged = self.stage()
        change = staged.reconcile(kind, key, type_, obj)
        self.commit(staged)
        return change

    def encoded(self, kind: str, key: str) -> bytes | None:
        return self._bytes[kind].get(key)

    def encoded_all(self, kind: str) -> Iterator[bytes]:
        """The bytes of every ``kind`` object (what a snapshot holds)."""
        return iter(self._bytes[kind].values())


class Staged:
    """A batch's changes on top of a :class:`ClusterObjects`, not yet applied to it."""

    def __init__(self, base: ClusterObjects) -> None:
        self.base = base
        self.changes: list[Change] = []
        self._objects: dict[tuple[str, str], KubeObject | None] = {}
        self._bytes: dict[tuple[str, str], bytes] = {}
        self._uids: dict[str, tuple[str, str] | None] = {}
        self._owned: dict[str, set[str]] = {}
        """Controller uid → keys of the claims staged with it (a superset: checked)."""

    def claims_owned_by(self, uid: str) -> Iterator[KubeObject]:
        """The ResourceClaims, as staged, whose controller has ``uid`` (an index, not a
        scan: the claim controller asks for every pod)."""
        keys = self.base._owned.get(uid, set()) | self._owned.get(uid, set())
        for key in keys:
            obj = self.get("resourceclaim", key)
            if obj is not None and controller_uid(obj) == uid:
                yield obj

    def get(self, kind: str, key: str) -> KubeObject | None:
        if (kind, key) in self._objects:
            return self._objects[kind, key]
        return self.base.get(kind, key)

    def has_node(self, name: str) -> bool:
        return self.get("node", name) is not None

    def values(self, kind: str) -> Iterator[KubeObject]:
        """Every ``kind`` object, as staged (a scan: for rare events only)."""
        for key, obj in self.base._objects[kind].items():
            if (kind, key) not in self._objects:
                yield obj
        for (staged_kind, _), staged in list(self._objects.items()):
            if staged_kind == kind and staged is not None:
                yield staged

    def uid_owner(self, uid: str) -> tuple[str, str] | None:
        if uid in self._uids:
            return self._uids[uid]
        return self.base.uid_owner(uid)

    def encoded(self, kind: str, key: str) -> bytes:
        """The bytes of the object staged (or stored) under ``kind``/``key``."""
        if (kind, key) in self._bytes:
            return self._bytes[kind, key]
        stored = self.base.encoded(kind, key)
        return stored if stored is not None else _encoder.encode(self.get(kind, key))

    def reconcile(self, kind: str, key: str, type_: EventType, obj: KubeObject) -> Change | None:
        """The change ``obj`` makes, staged; None if it makes none."""
        current = self.get(kind, key)
        if type_ == "DELETED":
            if current is None:
                return None
            was = self.encoded(kind, key)
            self._put(kind, key, current, None, b"")
            return self._changed(Change(kind, key, "DELETED", current, encoded=was))
        if current is not None:
            obj = _keep_binding(current, obj)
            old, new = _version(current), _version(obj)
            if old is not None and new is not None and new < old:
                return None
        encoded = _encoder.encode(obj)
        if current is not None and encoded == self.encoded(kind, key):
            return None
        self._put(kind, key, current, obj, encoded)
        type_ = "ADDED" if current is None else "MODIFIED"
        return self._changed(Change(kind, key, type_, obj, encoded=encoded))

    def _changed(self, change: Change) -> Change:
        self.changes.append(change)
        return change

    def _put(
        self, kind: str, key: str, old: KubeObject | None, new: KubeObject | None, data: bytes
    ) -> None:
        self._objects[kind, key] = new
        self._bytes[kind, key] = data
        if kind == "resourceclaim" and new is not None:
            owner = controller_uid(new)
            if owner is not None:
                self._owned.setdefault(owner, set()).add(key)
        if old is not None and self.uid_owner(old.metadata.uid) == (kind, key):
            self._uids[old.metadata.uid] = None
        if new is not None:
            self._uids[new.metadata.uid] = (kind, key)


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
