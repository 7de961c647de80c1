"""Node attributes as columns, for filters and scores that look at every node at once.

A :class:`NodeAttributes` belongs to one set of node objects: the snapshot builds a new
one when a node is added, updated or removed, never when pods move, so what it caches
(one column per label key asked for, the taint and image indexes, plugins' memos) lives
across many scheduling cycles.

``label(key)`` is the column: ``codes[row]`` indexes ``values`` (the distinct values of
that key, sorted), or is -1 where the node lacks the key. Selectors then become NumPy
operations: ``In`` is ``np.isin(codes, wanted)``, ``Exists`` is ``codes >= 0``, and a
topology domain is ``codes`` itself.

``taints()`` lists every (node, taint) pair against the distinct taints, so a plugin
decides once per distinct taint and spreads the answer over the nodes;
``images()`` maps each image name of ``status.images`` to the nodes that have it.
``memo(key, build)`` keeps any value derived from the nodes alone (a selector's mask)
for as long as the nodes do not change.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt

from contracts.k8s import Node
from services.common.k8s.taints import TaintKey, taint_key

Int32Array = npt.NDArray[np.int32]
Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
T = TypeVar("T")

MEMO_LIMIT: Final = 256
"""Memo entries kept per NodeAttributes (each an array over the nodes, ~40 kB at 5000
nodes for int64); past that the memo starts afresh."""


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

    def where_value(self, keep: BoolArray) -> BoolArray:
        """Rows whose value ``v`` has ``keep[code of v]``; rows without the label are
        False. ``keep`` has one entry per value in ``values``."""
        lookup = np.append(np.asarray(keep, dtype=np.bool_), False)
        return lookup[self.codes]

    def value(self, row: int) -> str | None:
        code = int(self.codes[row])
        return self.values[code] if code >= 0 else None


@dataclass(frozen=True, slots=True)
class TaintIndex:
    """Every node's taints as entries ``(rows[i], ids[i])`` over the distinct taints."""

    taints: tuple[TaintKey, ...]
    """The distinct taints, in the order first seen."""
    rows: Int32Array
    """Per entry: the node row."""
    ids: Int32Array
    """Per entry: index into ``taints``."""
    num_nodes: int

    def rows_having(self, chosen: BoolArray) -> BoolArray:
        """Per row: does the node have a taint ``t`` with ``chosen[t]``?"""
        mask = np.zeros(self.num_nodes, dtype=np.bool_)
        mask[self.rows[chosen[self.ids]]] = True
        return mask

    def count(self, chosen: BoolArray) -> Int64Array:
        """Per row: how many of the node's taints are ``chosen``."""
        counts: Int64Array = np.bincount(
            self.rows[chosen[self.ids]], minlength=self.num_nodes
        ).astype(np.int64)
        return counts


@dataclass(frozen=True, slots=True)
class ImageIndex:
    """``status.images`` of every node, by image name (as the node reports it)."""

    by_name: Mapping[str, tuple[Int64Array, Int64Array]]
    """Name → (rows of the nodes that have it, its size on each of those nodes)."""

    def num_nodes(self, name: str) -> int:
        """How many nodes report ``name`` (``ImageStateSummary.NumNodes``)."""
        found = self.by_name.get(name)
        return 0 if found is None else len(found[0])


class NodeAttributes:
    def __init__(self, nodes: Sequence[Node]) -> None:
        self._nodes = nodes
        self._labels: dict[str, LabelColumn] = {}
        self._taints: TaintIndex | None = None
        self._images: ImageIndex | None = None
        self._unschedulable: BoolArray | None = None
        self._memo: dict[Hashable, object] = {}

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

    def taints(self) -> TaintIndex:
        if self._taints is None:
            distinct: dict[TaintKey, int] = {}
            rows: list[int] = []
            ids: list[int] = []
            for row, node in enumerate(self._nodes):
                for taint in node.spec.taints:
                    key = taint_key(taint)
                    rows.append(row)
                    ids.append(distinct.setdefault(key, len(distinct)))
            self._taints = TaintIndex(
                tuple(distinct),
                np.asarray(rows, dtype=np.int32),
                np.asarray(ids, dtype=np.int32),
                len(self._nodes),
            )
        return self._taints

    def unschedulable(self) -> BoolArray:
        """Per row: ``spec.unschedulable``."""
        if self._unschedulable is None:
            self._unschedulable = np.fromiter(
                (node.spec.unschedulable for node in self._nodes),
                dtype=np.bool_,
                count=len(self._nodes),
            )
        return self._unschedulable

    def images(self) -> ImageIndex:
        if self._images is None:
            found: dict[str, tuple[list[int], list[int]]] = {}
            for row, node in enumerate(self._nodes):
                sizes: dict[str, int] = {}
                for image in node.status.images:
                    for name in image.names:
                        sizes[name] = image.size_bytes  # a later image wins, as a map
                for name, size in sizes.items():
                    rows, sizes_of = found.setdefault(name, ([], []))
                    rows.append(row)
                    sizes_of.append(size)
            self._images = ImageIndex(
                {
                    name: (np.asarray(rows, dtype=np.int64), np.asarray(sz, dtype=np.int64))
                    for name, (rows, sz) in found.items()
                }
            )
        return self._images

    def memo(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value cached under ``key``, built by ``build()`` the first time. The
        value must depend on the nodes only (not on pods): it lives until a node
        changes. Keys should start with the caller's plugin name."""
        try:
            return self._memo[key]  # type: ignore[return-value]
        except KeyError:
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            value = self._memo[key] = build()
            return value

    def take(self, rows: Sequence[int]) -> NodeAttributes:
        """The attributes of ``rows`` only, in that order."""
        return NodeAttributes([self._nodes[r] for r in rows])
