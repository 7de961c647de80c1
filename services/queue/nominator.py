"""The queue's side of the nominator: a pending pod whose ``status.nominatedNodeName``
is set is recorded in the store's nominations with its priority, so every scheduler
replica sees it in its two-pass filter (upstream's ``nominator``; the scheduler side
reads them).

The queue records what the pods say and clears what it recorded when the field is
cleared or the pod is bound or deleted. A nomination made by preemption that the pod
does not show yet is left alone when an update carries no nominatedNodeName either
(upstream's ``UpdateNominatedPod`` keeps it). Writes are collected and flushed to the
store once per batch of events.
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.k8s import Pod
from services.common.store import ClusterStore, Nomination


class Nominator:
    def __init__(self) -> None:
        self._recorded: dict[str, Nomination] = {}
        self._set: dict[str, Nomination] = {}
        self._clear: set[str] = set()

    @property
    def nominations(self) -> Mapping[str, Nomination]:
        """What the queue has recorded, pod uid → nomination."""
        return self._recorded

    def load(self, stored: Mapping[str, Nomination]) -> None:
        """Start from the store's nominations (after a restart)."""
        self._recorded = dict(stored)

    def observe(self, pod: Pod, priority: int, old: Pod | None = None) -> None:
        """A pending pod was added or updated (``old``: its previous version)."""
        uid = pod.metadata.uid
        node = pod.status.nominated_node_name or ""
        if node:
            nomination = Nomination(node, priority)
            if self._recorded.get(uid) != nomination:
                self._record(uid, nomination)
        elif old is not None and old.status.nominated_node_name:
            self.forget(uid)
        elif uid in self._recorded and self._recorded[uid].priority != priority:
            self._record(uid, Nomination(self._recorded[uid].node, priority))

    def nominate(self, uid: str, node: str, priority: int) -> None:
        """Preemption nominated the pod to ``node`` (its status may show it later)."""
        nomination = Nomination(node, priority)
        if self._recorded.get(uid) != nomination:
            self._record(uid, nomination)

    def forget(self, uid: str) -> None:
        """The pod was bound, deleted, or its nomination cleared."""
        if self._recorded.pop(uid, None) is not None or uid in self._set:
            self._set.pop(uid, None)
            self._clear.add(uid)

    def _record(self, uid: str, nomination: Nomination) -> None:
        self._recorded[uid] = nomination
        self._set[uid] = nomination
        self._clear.discard(uid)

    async def flush(self, store: ClusterStore) -> None:
        """Write the changes since the last flush."""
        if self._set:
            written = dict(self._set)
            await store.set_nominations(written)
            for uid, nomination in written.items():
                if self._set.get(uid) == nomination:
                    del self._set[uid]
        if self._clear:
            cleared = sorted(self._clear)
            await store.clear_nominations(cleared)
            self._clear.difference_update(cleared)
