"""Counts per topology pair (``topologyToMatchedTermCount``), held as arrays.

For one topology key the counts live in an int64 vector aligned with a node table's
:class:`~services.framework.cache.attributes.LabelColumn` for that key (index =
label value code), so mapping them onto nodes is one fancy-index over the column's
codes. Counts are built by :func:`accumulate` from (node rows, weight per row) pieces
with ``np.bincount``, and changed one pair at a time by :meth:`TopologyCounts.update`
(AddPod / RemovePod). A table other than the one the counts were built against (the
nominated-pods view) is served by remapping its label values.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from services.framework.api.types import Int64Array
from services.framework.cache.attributes import LabelColumn, NodeAttributes

Rows = NDArray[np.intp]


@dataclass(slots=True)
class DomainCounts:
    """Counts of one topology key: ``counts[code]`` for values of ``column``; values no
    node of that table has (only reachable through ``update``) go to ``extra``."""

    column: LabelColumn
    counts: Int64Array
    extra: dict[str, int] = field(default_factory=dict)

    def clone(self) -> DomainCounts:
        return DomainCounts(self.column, self.counts.copy(), dict(self.extra))

    def nonzero(self) -> int:
        return int(np.count_nonzero(self.counts)) + sum(1 for v in self.extra.values() if v)

    def add(self, value: str, delta: int) -> None:
        code = self.column.code_of(value)
        if code >= 0:
            self.counts[code] += delta
        else:
            self.extra[value] = self.extra.get(value, 0) + delta

    def per_node(self, column: LabelColumn) -> Int64Array:
        """The count of each node's value in ``column`` (0 where the node lacks the key)."""
        if column is self.column or column.values == self.column.values:
            padded = np.append(self.counts, 0)  # code -1 picks the trailing 0
            return padded[column.codes]
        mapped = np.zeros(len(column.values) + 1, dtype=np.int64)
        for code, value in enumerate(column.values):
            own = self.column.code_of(value)
            mapped[code] = self.counts[own] if own >= 0 else self.extra.get(value, 0)
        return mapped[column.codes]

    def pairs(self) -> Iterator[tuple[str, int]]:
        for code in np.flatnonzero(self.counts).tolist():
            yield self.column.values[code], int(self.counts[code])
        yield from ((v, c) for v, c in self.extra.items() if c)


class TopologyCounts:
    """``topologyToMatchedTermCount``: topology key → value → count; pairs with a zero
    count do not exist (``len`` counts the others)."""

    def __init__(self, attributes: NodeAttributes, by_key: dict[str, DomainCounts]) -> None:
        self._attributes = attributes
        self._by_key = by_key

    def clone(self) -> TopologyCounts:
        return TopologyCounts(self._attributes, {k: d.clone() for k, d in self._by_key.items()})

    def __len__(self) -> int:
        return sum(d.nonzero() for d in self._by_key.values())

    def keys(self) -> list[str]:
        return list(self._by_key)

    def update(self, key: str, value: str, delta: int) -> None:
        """Add ``delta`` to the pair (``topologyToMatchedTermCount.update``)."""
        counts = self._by_key.get(key)
        if counts is None:
            column = self._attributes.label(key)
            counts = self._by_key[key] = DomainCounts(
                column, np.zeros(len(column.values), dtype=np.int64)
            )
        counts.add(value, delta)

    def per_node(self, key: str, column: LabelColumn) -> Int64Array:
        """Each node's count for its value of ``key`` (0 where absent or unset)."""
        counts = self._by_key.get(key)
        if counts is None:
            return np.zeros(len(column.codes), dtype=np.int64)
        return counts.per_node(column)

    def as_dict(self) -> dict[tuple[str, str], int]:
        """The non-zero pairs, as upstream's map (for tests and explain output)."""
        return {(k, v): c for k, d in self._by_key.items() for v, c in d.pairs()}


class Accumulator:
    """Collects weighted node rows per topology key, then counts them per value."""

    def __init__(self, attributes: NodeAttributes) -> None:
        self._attributes = attributes
        self._pieces: defaultdict[str, list[tuple[Rows, Int64Array]]] = defaultdict(list)

    def add(self, key: str, rows: Rows, weights: Int64Array) -> None:
        """Count ``weights[i]`` at the value of ``key`` on node row ``rows[i]``."""
        if len(rows):
            self._pieces[key].append((rows, weights))

    def result(self) -> tuple[TopologyCounts, bool]:
        """The counts, and whether any piece landed on a node that has its key (an
        entry upstream would have created, even if its weights cancel out)."""
        by_key: dict[str, DomainCounts] = {}
        touched = False
        for key, pieces in self._pieces.items():
            column = self._attributes.label(key)
            if len(pieces) == 1:
                rows, weights = pieces[0]
            else:
                rows = np.concatenate([p[0] for p in pieces])
                weights = np.concatenate([p[1] for p in pieces])
            codes = column.codes[rows]
            present = codes >= 0
            if not present.any():
                continue
            touched = True
            sums = np.bincount(
                codes[present], weights=weights[present], minlength=len(column.values)
            )
            by_key[key] = DomainCounts(column, np.rint(sums).astype(np.int64))
        return TopologyCounts(self._attributes, by_key), touched
