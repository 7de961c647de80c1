"""``Cache`` (upstream's scheduler cache): one scheduler replica's columnar view of
nodes and the pods on them, from which each cycle takes its per-cycle
:class:`~services.framework.cache.snapshot.Snapshot` (:meth:`Cache.snapshot`).

It is a projection of the event log (:meth:`Cache.apply` takes the informer's
sequenced entries, ignoring any ``seq`` already applied) plus this replica's own
assumptions. A pod counts on a node while it has ``spec.nodeName`` and is not
Succeeded/Failed (bound), or while this replica assumed it there. A pod's life here,
as upstream's cache draws it::

    (pending) ──assume──▶ Assumed ──event: bound to a node──▶ Bound ──deleted/terminal──▶ gone
        ▲                    │
        └── forget / expire ─┘

Pods bound to a node the cache does not (yet, or any more) have are remembered and
counted as soon as the node appears. The store stays the authority on capacity: when
its atomic assume reports a conflict, :meth:`correct_usage` lays the store's usage over
the node until the next cluster event for that node.

DRA devices other replicas hold (``foreign_devices``): when the store refuses a
reservation because another replica's pod or an allocated claim the log has not
brought here yet holds a device (``AssumeResult.devices``), the scheduler records
those devices until the assume TTL passes (:meth:`hold_foreign_devices`), and the
DynamicResources plugin treats :meth:`devices_held_elsewhere` (which it reads as
``Handle.listers.devices_held_elsewhere``) as allocated, so the retry does not pick
them again. By then the other pod's claim is in the log (allocated
in the plugin's listers) or its reservation has expired.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping

import msgspec

from contracts.events import LogEntry, NodeEntry, PodEntry
from contracts.k8s import TERMINAL_PHASES, Node, Pod, namespaced_name
from services.common.resources import ResourceError, node_allocatable
from services.framework.api.listers import Listers
from services.framework.api.types import PodInfo, pod_priority, pod_uid
from services.framework.cache.columns import NodeColumns
from services.framework.cache.snapshot import Snapshot

log = logging.getLogger(__name__)

_node_decoder = msgspec.json.Decoder(Node)
_pod_decoder = msgspec.json.Decoder(Pod)


def _pod_info(pod: Pod) -> PodInfo:
    try:
        return PodInfo.of(pod)
    except ResourceError as err:
        log.warning("pod %s counted without requests: %s", namespaced_name(pod.metadata), err)
        uid, key = pod_uid(pod), namespaced_name(pod.metadata)
        return PodInfo(pod, uid, key, pod_priority(pod), {}, {})


class Cache:
    def __init__(self) -> None:
        self.listers = Listers()
        """Namespaces, volumes, claims, storage classes, PDBs, priority classes."""
        self.listers.devices_held_elsewhere = self.devices_held_elsewhere
        self._reset()

    def _reset(self) -> None:
        self._columns = NodeColumns()
        self._pods_on: dict[str, dict[str, PodInfo]] = {}
        """Node name → pods counted there, also for nodes the snapshot lacks."""
        self._num_pods = 0
        """How many pods ``_pods_on`` holds in all (kept by :meth:`_count`)."""
        self._bound: dict[str, str] = {}
        self._assumed: dict[str, tuple[str, float]] = {}
        self._extra: dict[str, dict[str, int]] = {}
        self._seq = 0
        self.foreign_devices: dict[str, float] = {}
        """DRA device (``driver/pool/device``) → until when (clock seconds) another
        replica's reservation or a claim the store knows of holds it: read it through
        :meth:`devices_held_elsewhere`."""

    @property
    def applied_seq(self) -> int:
        """The seq of the last log entry applied (0 before any)."""
        return self._seq

    @property
    def num_nodes(self) -> int:
        return len(self._columns.names)

    @property
    def num_pods(self) -> int:
        """Pods on nodes (bound and assumed)."""
        return self._num_pods

    @property
    def num_assumed(self) -> int:
        return len(self._assumed)

    def snapshot(self) -> Snapshot:
        """The current nodes as a :class:`Snapshot` (valid until the next change)."""
        return self._columns.snapshot()

    # -- the event log -------------------------------------------------------------

    def apply(self, events: Iterable[LogEntry]) -> int:
        """Apply log entries in order, skipping those with ``seq <= applied_seq``.
        Kinds other than pod and node only advance ``applied_seq``. Returns how many
        entries were applied."""
        applied = 0
        for event in events:
            if event.seq <= self._seq:
                continue
            if isinstance(event, PodEntry):
                if event.type == "DELETED":
                    self.remove_pod(pod_uid(event.object))
                else:
                    self.add_pod(event.object)
            elif isinstance(event, NodeEntry):
                if event.type == "DELETED":
                    self.remove_node(event.object.metadata.name)
                else:
                    self.add_node(event.object)
            else:
                self.listers.apply(event)
            self._seq = event.seq
            applied += 1
        return applied

    def load(
        self,
        nodes: Mapping[str, bytes],
        pods: Mapping[str, bytes],
        seq: int,
        others: Mapping[str, Mapping[str, bytes]] | None = None,
    ) -> dict[str, Pod]:
        """Replace everything with the store's objects (JSON by key) as of ``seq``;
        ``others`` holds the listers' kinds (kind → key → JSON). Local assumptions are
        dropped. Returns every pod by UID, to re-assume some."""
        self._reset()
        self.listers.load(others or {})
        for body in nodes.values():
            self.add_node(_node_decoder.decode(body))
        by_uid: dict[str, Pod] = {}
        for body in pods.values():
            pod = _pod_decoder.decode(body)
            by_uid[pod_uid(pod)] = pod
            self.add_pod(pod)
        self._seq = seq
        return by_uid

    # -- nodes -----------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        """Add a node or update its object and allocatable (``AddNode`` / ``UpdateNode``)."""
        name = node.metadata.name
        try:
            allocatable = node_allocatable(node)
        except ResourceError as err:
            log.warning("node %s has an invalid allocatable, treated as empty: %s", name, err)
            allocatable = {}
        row = self._columns.index.get(name)
        if row is None:
            row = self._columns.add_row(name, node, self._pods_on.setdefault(name, {}))
        else:
            self._drop_extra(name)
        self._columns.set_node(row, node, allocatable)

    def node(self, name: str) -> Node | None:
        """The node object as applied, or None when the snapshot lacks it."""
        return self._columns.node(name)

    def remove_node(self, name: str) -> None:
        """Forget the node; pods bound to it stay remembered until they go."""
        if name in self._columns.index:
            self._extra.pop(name, None)
            self._columns.remove_row(name)

    # -- pods ------------------------------------------------------------------

    def add_pod(self, pod: Pod) -> None:
        """Add or update a pod (``AddPod`` / ``UpdatePod``). It counts on
        ``spec.nodeName`` unless terminal; a binding replaces this replica's assumption."""
        uid = pod_uid(pod)
        terminal = pod.status.phase in TERMINAL_PHASES
        node = None if terminal else pod.spec.node_name
        if node is None:
            self._unbind(uid)
            if terminal:
                self.forget(uid)
            return
        info = _pod_info(pod)
        if self._bound.get(uid) == node:
            old = self._pods_on[node][uid]
            if old.requests == info.requests and old.nonzero_requests == info.nonzero_requests:
                self._pods_on[node][uid] = info
                self._columns.pods_changed(self._columns.index.get(node))
                return
        self.forget(uid)
        self._unbind(uid)
        self._count(node, info, 1)
        self._bound[uid] = node
        self._drop_extra(node)

    def remove_pod(self, uid: str) -> None:
        """The pod was deleted: stop counting it wherever it was."""
        self._unbind(uid)
        self.forget(uid)

    def is_bound(self, uid: str) -> bool:
        return uid in self._bound

    def _unbind(self, uid: str) -> None:
        node = self._bound.pop(uid, None)
        if node is not None:
            self._count(node, self._pods_on[node][uid], -1)
            self._drop_extra(node)

    def _count(self, node: str, pod: PodInfo, sign: int) -> None:
        on_node = self._pods_on.setdefault(node, {})
        row = self._columns.index.get(node)
        if sign > 0:
            self._num_pods += pod.uid not in on_node  # never is, as callers forget first
            on_node[pod.uid] = pod
        else:
            self._num_pods -= on_node.pop(pod.uid, None) is not None
            if not on_node and row is None:
                del self._pods_on[node]
        if row is not None:
            self._columns.charge(row, pod, sign)
        else:
            self._columns.pods_changed(None)

    # -- this replica's assumptions --------------------------------------------

    def assume(self, pod: PodInfo, node: str, deadline: float = math.inf) -> None:
        """Count ``pod`` on ``node`` until it is bound, forgotten or ``deadline`` passes
        (``AssumePod``). A previous assumption of the same pod is replaced."""
        self.forget(pod.uid)
        self._count(node, pod, 1)
        self._assumed[pod.uid] = (node, deadline)

    def forget(self, uid: str) -> None:
        """Drop this replica's assumption of the pod, if any (``ForgetPod``)."""
        assumed = self._assumed.pop(uid, None)
        if assumed is not None:
            self._count(assumed[0], self._pods_on[assumed[0]][uid], -1)

    def assumed_node(self, uid: str) -> str | None:
        assumed = self._assumed.get(uid)
        return assumed[0] if assumed else None

    def assumed(self, uid: str) -> tuple[str, float] | None:
        """The pod's assumption: (node, deadline), or None."""
        return self._assumed.get(uid)

    def assumed_uids(self) -> set[str]:
        return set(self._assumed)

    def has_expired(self, now: float) -> bool:
        """Whether an assumption's deadline is before ``now``."""
        return any(deadline < now for _, deadline in self._assumed.values())

    def expire_assumed(self, now: float) -> list[str]:
        """Forget assumptions whose deadline is before ``now``; returns their UIDs."""
        expired = [uid for uid, (_, deadline) in self._assumed.items() if deadline < now]
        for uid in expired:
            self.forget(uid)
        return expired

    def hold_foreign_devices(self, devices: Iterable[str], until: float) -> None:
        """The store said others hold ``devices``: count them as allocated until
        ``until`` (a later deadline for a device already held wins)."""
        held = self.foreign_devices
        for device in devices:
            held[device] = max(held.get(device, until), until)

    def devices_held_elsewhere(self, now: float) -> frozenset[str]:
        """The devices others hold as far as this replica knows at ``now`` (those past
        their deadline are dropped): the allocator must not choose them."""
        held = self.foreign_devices
        for device in [d for d, until in held.items() if until < now]:
            del held[device]
        return frozenset(held)

    def correct_usage(self, node: str, usage: Mapping[str, int]) -> None:
        """Raise the node's requested amounts to the store's ``usage`` (another replica's
        assumptions, entries not applied here yet) until the next event for the node."""
        row = self._columns.index.get(node)
        if row is None:
            return
        self._drop_extra(node)
        extra = self._columns.add_requested(row, usage)
        if extra:
            self._extra[node] = extra

    def drop_corrections(self) -> None:
        """Undo every :meth:`correct_usage` (the caller now holds the store's
        assumptions pod by pod, and has applied the log as far as the store has)."""
        for node in list(self._extra):
            self._drop_extra(node)

    def _drop_extra(self, node: str) -> None:
        extra = self._extra.pop(node, None)
        row = self._columns.index.get(node)
        if extra and row is not None:
            self._columns.subtract_requested(row, extra)
