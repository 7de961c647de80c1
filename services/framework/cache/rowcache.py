"""Per-node results kept across scheduling cycles, recomputed only where a node changed.

Most of what a score plugin computes for a node depends only on that node (its
allocatable, the pods counted on it) and on a few numbers of the incoming pod, such as
its requests. Between two pods of a workload usually one node changes: the one the
previous pod went to. A :class:`RowCache` keeps, per key (those pod numbers), the value
for every row and recomputes only the rows whose ``Snapshot.pod_versions`` moved, and
everything when the nodes themselves changed (their ``attributes`` object is replaced).

The values are exactly what the plugin would compute from scratch: the cache only
decides which rows need computing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from services.framework.api.interface import Rows
from services.framework.api.types import Int64Array
from services.framework.cache.snapshot import Snapshot

Compute = Callable[[Rows], Int64Array]
"""``compute(rows)``: the values for those rows, in that order."""


@dataclass(slots=True)
class _Entry:
    attributes: object
    versions: Int64Array
    values: Int64Array


class RowCache:
    def __init__(self, max_keys: int = 32) -> None:
        self._max = max_keys
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()

    def values(self, nodes: Snapshot, rows: Rows, key: Hashable, compute: Compute) -> Int64Array:
        """The values of ``rows`` for ``key``, computing only rows that changed."""
        n = nodes.num_nodes
        entry = self._entries.get(key)
        if entry is None or entry.attributes is not nodes.attributes or len(entry.values) != n:
            every = np.arange(n, dtype=np.intp)
            entry = _Entry(nodes.attributes, nodes.pod_versions.copy(), compute(every))
            self._entries[key] = entry
            if len(self._entries) > self._max:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
            stale = np.flatnonzero(nodes.pod_versions != entry.versions)
            if stale.size:
                entry.values[stale] = compute(stale)
                entry.versions[stale] = nodes.pod_versions[stale]
        return entry.values if len(rows) == n and _is_identity(rows, n) else entry.values[rows]


def _is_identity(rows: Rows, n: int) -> bool:
    return bool(rows[0] == 0 and rows[-1] == n - 1) if n else True
