"""Node labels as columns, for filters and scores that look at every node at once.

A :class:`NodeAttributes` belongs to one set of node objects: the snapshot builds a new
one when a node is added, updated or removed, never when pods move, so what it caches
(one column per label key asked for) lives across many scheduling cycles.

``label(key)`` is the column: ``codes[row]`` indexes ``values`` (the distinct values of
that key, sorted), or is -1 where the node lacks the key. Selectors then become NumPy
operations: ``In`` is ``np.isin(codes, wanted)``, ``Exists`` is ``codes >= 0``, and a
topology domain is ``codes`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from contracts.k8s import Node

Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class LabelColumn:
    key: str
    codes: Int32Array
    """Per node row: index into ``values``, or -1 if the node has no such label."""
    values: tuple[str, ...]

    def present(self) -> BoolArray:
        return self.codes >= 0

    def code_of(self, value: str) -> int:
        """The code of ``value``, or -1 if no node has it."""
        lo, hi = 0, len(self.values)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.values[mid] < value:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(self.values) and self.values[lo] == value else -1

    def codes_of(self, values: Sequence[str]) -> Int32Array:
        """Codes of the values some node has (the others are dropped)."""
        codes = [self.code_of(v) for v in values]
        return np.asarray([c for c in codes if c >= 0], dtype=np.int32)

    def matches(self, values: Sequence[str]) -> BoolArray:
        """Rows whose value is one of ``values`` (``In``)."""
        return np.isin(self.codes, self.codes_of(values))

    def value(self, row: int) -> str | None:
        code = int(self.codes[row])
        return self.values[code] if code >= 0 else None


class NodeAttributes:
    def __init__(self, nodes: Sequence[Node]) -> None:
        self._nodes = nodes
        self._labels: dict[str, LabelColumn] = {}

    @property
    def num_nodes(self) -> int:
        return len(self._nodes)

    def label(self, key: str) -> LabelColumn:
        column = self._labels.get(key)
        if column is None:
            raw = [node.metadata.labels.get(key) for node in self._nodes]
            values = tuple(sorted({v for v in raw if v is not None}))
            lookup = {v: i for i, v in enumerate(values)}
            codes = np.fromiter(
                (lookup[v] if v is not None else -1 for v in raw),
                dtype=np.int32,
                count=len(raw),
            )
            column = self._labels[key] = LabelColumn(key, codes, values)
        return column

    def take(self, rows: Sequence[int]) -> NodeAttributes:
        """The attributes of ``rows`` only, in that order."""
        return NodeAttributes([self._nodes[r] for r in rows])
