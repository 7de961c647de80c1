"""Per node, how many of its pods a selector counts, kept current across cycles.

Upstream counts, for every node, the node's pods that ``countPodsMatchSelector``
accepts (same namespace as the incoming pod, not terminating, matched by the
selector). Doing that per cycle is a pass over every pod. :class:`PodIndex` instead
keeps one count array per recently used (namespace, selector) and, when it sees a new
Snapshot, brings them up to date from the rows whose pods changed:

- a row's pods changed iff its pod dict differs from the copy taken when the row was
  last counted (pod UIDs and PodInfo objects, which the snapshot replaces on every pod
  update). Rows whose pod count changed are recounted first; one list comparison,
  run in C, then confirms that no other row changed (a relabelled pod, or one pod
  replacing another), and only if one did are all rows compared;
- appended rows (new nodes) extend the arrays; any other change of the row layout
  (a node removed, a different snapshot) starts over.

The index belongs to one plugin instance and is used from one thread, as a
Framework is.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from services.common.k8s.labels import Selector
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot

PodMatcher = tuple[str, Selector]
"""(namespace, selector): what ``countPodsMatchSelector`` is called with."""


def namespace_of(pod: PodInfo) -> str:
    return pod.pod.metadata.namespace or "default"


def counts(pod: PodInfo, namespace: str, selector: Selector) -> bool:
    """``countPodsMatchSelector`` for one pod: counted unless terminating, in another
    namespace or not selected."""
    meta = pod.pod.metadata
    return (
        meta.deletion_timestamp is None
        and (meta.namespace or "default") == namespace
        and selector.matches(meta.labels)
    )


def count_in(pods: Mapping[str, PodInfo], namespace: str, selector: Selector) -> int:
    return sum(1 for p in pods.values() if counts(p, namespace, selector))


class PodIndex:
    def __init__(self, max_selectors: int = 64) -> None:
        self._max = max_selectors
        self._table: Snapshot | None = None
        self._pods: Sequence[Mapping[str, PodInfo]] | None = None
        self._attributes: object = None
        """The NodeAttributes last seen: the snapshot replaces it when nodes change."""
        self._names: list[str] = []
        self._seen: list[dict[str, PodInfo]] = []
        self._versions: Int64Array = np.zeros(0, dtype=np.int64)
        """Per row, ``Snapshot.pod_versions`` when the row was last counted."""
        self._counts: OrderedDict[PodMatcher, Int64Array] = OrderedDict()

    def row_counts(self, nodes: Snapshot, namespace: str, selector: Selector) -> Int64Array:
        """Per row of ``nodes``: the pods there that ``selector`` counts (read-only)."""
        if selector.empty() or selector.nothing:
            return np.zeros(nodes.num_nodes, dtype=np.int64)
        self._sync(nodes)
        key = (namespace, selector)
        found = self._counts.get(key)
        if found is None:
            found = np.fromiter(
                (count_in(pods, namespace, selector) for pods in self._seen),
                dtype=np.int64,
                count=len(self._seen),
            )
            self._counts[key] = found
            if len(self._counts) > self._max:
                self._counts.popitem(last=False)
        else:
            self._counts.move_to_end(key)
        return found

    def _sync(self, nodes: Snapshot) -> None:
        if nodes is self._table:
            return
        n, known = nodes.num_nodes, len(self._seen)
        if nodes.pods is not self._pods or n < known or not self._same_rows(nodes, known):
            self._reset(nodes)
            return
        if n > known:
            self._names.extend(nodes.names[known:])
            self._seen.extend({} for _ in range(n - known))
            self._versions = np.concatenate([self._versions, np.full(n - known, -1, np.int64)])
            for key, old in self._counts.items():
                self._counts[key] = np.concatenate([old, np.zeros(n - known, np.int64)])
        versions = nodes.pod_versions
        self._recount(nodes, np.flatnonzero(versions != self._versions).tolist())
        self._versions = versions.copy()
        self._table = nodes

    def _recount(self, nodes: Snapshot, rows: list[int]) -> None:
        for row in rows:
            pods = nodes.pods[row]
            if pods == self._seen[row]:
                continue
            seen = self._seen[row] = dict(pods)
            for (namespace, selector), array in self._counts.items():
                array[row] = count_in(seen, namespace, selector)

    def _same_rows(self, nodes: Snapshot, known: int) -> bool:
        """Rows ``0..known-1`` still hold the nodes they held (names compared only
        when the node objects changed)."""
        if nodes.attributes is self._attributes and nodes.num_nodes == known:
            return True
        self._attributes = nodes.attributes
        return list(nodes.names[:known]) == self._names

    def _reset(self, nodes: Snapshot) -> None:
        self._table = nodes
        self._pods = nodes.pods
        self._attributes = nodes.attributes
        self._names = list(nodes.names)
        self._seen = list(map(dict, nodes.pods))
        self._versions = nodes.pod_versions.copy()
        self._counts.clear()
