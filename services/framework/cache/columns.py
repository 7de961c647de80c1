"""``NodeColumns``: the growable arrays behind a Snapshot, one row per node.

Rows are dense: removing a node moves the last row into its place, so rows ``0..n-1``
are always the live nodes and a column slice is a plain view. Arrays grow by doubling
(rows) and resource columns are added as new resource names appear.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from contracts.k8s import Node
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.attributes import NodeAttributes
from services.framework.cache.snapshot import BUILTIN_RESOURCES, Snapshot, charge


class NodeColumns:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self._nodes: list[Node] = []
        self._pods: list[dict[str, PodInfo]] = []
        self._resources = {name: i for i, name in enumerate(BUILTIN_RESOURCES)}
        self._alloc = _table(16, 8)
        self._req = _table(16, 8)
        self._nonzero = _table(16, 2)
        self._versions = np.zeros(16, dtype=np.int64)
        """Per row: the value of ``_version`` when the row's pods last changed."""
        self._version = 0
        self._affinity_pods = 0
        """Pods counted in the rows that set podAffinity or podAntiAffinity."""
        self._table: Snapshot | None = None
        self._attributes: NodeAttributes | None = None
        """Rebuilt only when a node changes (not when pods do): see framework.attributes."""

    def snapshot(self) -> Snapshot:
        """The live rows as a Snapshot; valid until the next change."""
        if self._table is None:
            n, r = len(self.names), len(self._resources)
            self._table = Snapshot(
                names=self.names,
                index=self.index,
                nodes=self._nodes,
                resources=self._resources,
                allocatable=self._alloc[:n, :r],
                requested=self._req[:n, :r],
                nonzero_requested=self._nonzero[:n],
                pods=self._pods,
                attributes=self._node_attributes(),
                pod_versions=self._versions[:n],
                affinity_pods=self._affinity_pods,
            )
        return self._table

    def _node_attributes(self) -> NodeAttributes:
        if self._attributes is None:
            self._attributes = NodeAttributes(list(self._nodes))
        return self._attributes

    def column(self, resource: str) -> int:
        col = self._resources.get(resource)
        if col is None:
            col = len(self._resources)
            if col == self._alloc.shape[1]:
                self._alloc, self._req = _grown(self._alloc, 0, col), _grown(self._req, 0, col)
            self._resources = {**self._resources, resource: col}
            self._table = None
        return col

    def node(self, name: str) -> Node | None:
        row = self.index.get(name)
        return None if row is None else self._nodes[row]

    def add_row(self, name: str, node: Node, pods: dict[str, PodInfo]) -> int:
        """A new row for ``node``, charged with ``pods`` (kept by reference: the
        caller updates that dict as pods come and go)."""
        row = len(self.names)
        if row == self._alloc.shape[0]:
            self._alloc, self._req = _grown(self._alloc, row, 0), _grown(self._req, row, 0)
            self._nonzero = _grown(self._nonzero, row, 0)
            self._versions = np.pad(self._versions, (0, row))
        self.names.append(name)
        self._nodes.append(node)
        self._pods.append(pods)
        self.index[name] = row
        self._attributes = None
        self._alloc[row] = 0
        self._req[row] = 0
        self._nonzero[row] = 0
        for pod in pods.values():
            self.charge(row, pod, 1)
        self.pods_changed(row)
        return row

    def set_node(self, row: int, node: Node, allocatable: Mapping[str, int]) -> None:
        columns = [self.column(resource) for resource in allocatable]
        self._nodes[row] = node
        self._attributes = None
        self._alloc[row] = 0
        self._alloc[row, columns] = list(allocatable.values())
        self._table = None

    def remove_row(self, name: str) -> None:
        row = self.index.pop(name)
        self._affinity_pods -= sum(map(_with_pod_affinity, self._pods[row].values()))
        self._attributes = None
        last = len(self.names) - 1
        if row != last:
            moved = self.names[last]
            self.names[row], self._nodes[row] = moved, self._nodes[last]
            self._pods[row] = self._pods[last]
            self._alloc[row], self._req[row] = self._alloc[last], self._req[last]
            self._nonzero[row] = self._nonzero[last]
            self.index[moved] = row
            self.pods_changed(row)
        self.names.pop()
        self._nodes.pop()
        self._pods.pop()
        self._table = None

    def charge(self, row: int, pod: PodInfo, sign: int) -> None:
        """Add (1) or remove (-1) the pod's requests to the row."""
        for resource in pod.requests:
            if resource not in self._resources:
                self.column(resource)
        charge(self._req[row], self._nonzero[row], self._resources, pod, sign)
        if _with_pod_affinity(pod):
            self._affinity_pods += sign
        self.pods_changed(row)

    def pods_changed(self, row: int | None) -> None:
        """The pods counted on ``row`` changed (None: on a node the table lacks)."""
        if row is not None:
            self._version += 1
            self._versions[row] = self._version
        self._table = None

    def add_requested(self, row: int, amounts: Mapping[str, int]) -> dict[str, int]:
        """Raise the row's requested amounts to at least ``amounts``; returns what was
        added per resource (for :meth:`subtract_requested`)."""
        added: dict[str, int] = {}
        for resource, amount in amounts.items():
            col = self.column(resource)
            missing = amount - int(self._req[row, col])
            if missing > 0:
                added[resource] = missing
                self._req[row, col] += missing
        self.pods_changed(row)  # the row's usage moved: cached per-row results must see it
        return added

    def subtract_requested(self, row: int, amounts: Mapping[str, int]) -> None:
        for resource, amount in amounts.items():
            self._req[row, self._resources[resource]] -= amount
        self.pods_changed(row)  # the row's usage moved: cached per-row results must see it


def _with_pod_affinity(pod: PodInfo) -> bool:
    """The pod sets podAffinity or podAntiAffinity (immutable in a pod's spec)."""
    affinity = pod.pod.spec.affinity
    return affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    )


def _table(rows: int, columns: int) -> Int64Array:
    """A zeroed table stored column by column: the cycle reads whole columns (one
    resource of every node), which run 1.6 times faster contiguous than strided."""
    return np.zeros((rows, columns), dtype=np.int64, order="F")


def _grown(table: Int64Array, rows: int, columns: int) -> Int64Array:
    """``table`` with ``rows`` more rows and ``columns`` more columns of zeros."""
    grown = _table(table.shape[0] + rows, table.shape[1] + columns)
    grown[: table.shape[0], : table.shape[1]] = table
    return grown
