"""``Snapshot`` (upstream's per-cycle snapshot of the cache): the nodes in columns, what
Filter and Score plugins read.

Row ``i`` is node ``names[i]``. Resources are columns of ``allocatable`` and
``requested`` (int64, cpu in millicores); the first four are fixed (:data:`CPU_COL`,
:data:`MEMORY_COL`, :data:`EPHEMERAL_COL`, :data:`PODS_COL`) and extended resources get
columns as they appear. ``requested[:, PODS_COL]`` is the number of pods on the node,
``allocatable[:, PODS_COL]`` the pods it allows. ``nonzero_requested`` holds
``NodeInfo.NonZeroRequested`` (cpu, memory) for scoring.

A Snapshot is a read-only view: it is valid until the Cache it came from changes;
:meth:`Snapshot.with_pods` and :meth:`Snapshot.without_pods` derive views of some rows.
:class:`NodeInfo` is the per-node scalar form (explain output, tests, slow plugins);
keep it out of the hot path.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, cast

import numpy as np
from numpy.typing import NDArray

from contracts.k8s import Node
from services.common.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.attributes import NodeAttributes

CPU_COL: Final = 0
MEMORY_COL: Final = 1
EPHEMERAL_COL: Final = 2
PODS_COL: Final = 3
BUILTIN_RESOURCES: Final = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node as upstream's ``framework.NodeInfo`` shows it."""

    name: str
    node: Node
    allocatable: Mapping[str, int]
    requested: Mapping[str, int]
    """Sum of the pods' requests, including ``pods`` (the pod count)."""
    nonzero_requested: Mapping[str, int]
    pods: tuple[PodInfo, ...]


def _moved(
    on_node: Mapping[str, PodInfo],
    pods: Sequence[PodInfo],
    sign: int,
    resources: Mapping[str, int],
    delta: list[int],
    nonzero: list[int],
) -> dict[str, PodInfo]:
    """A row's pod map with ``pods`` added (``sign=1``) or removed (``-1``), a copy (the
    map may be shared); their requests, pod count and non-zero cpu/memory are summed
    into ``delta`` and ``nonzero`` in Python ints, for one vector add per row (what
    :func:`charge` adds pod by pod)."""
    out = dict(on_node)
    for pod in pods:
        if sign > 0:
            out[pod.uid] = pod
        else:
            del out[pod.uid]
        for name, amount in pod.requests.items():
            delta[resources[name]] += amount
        delta[PODS_COL] += 1
        nonzero[0] += pod.nonzero_cpu
        nonzero[1] += pod.nonzero_memory
    return out


_NO_PODS: Final[Mapping[str, PodInfo]] = MappingProxyType({})
"""The pod map of a row whose every pod a view removed (shared, read-only;
:meth:`Snapshot.adjust` copies a row's map before changing it)."""

_VIEW_VERSIONS = itertools.count(-2, -1)
"""Versions of rows a view changed in place (negative and below a view's -1: never a
cached row's version, never one seen before)."""


def charge(
    requested: Int64Array,
    nonzero: Int64Array,
    resources: Mapping[str, int],
    pod: PodInfo,
    sign: int = 1,
) -> None:
    """Add (``sign=1``) or remove (``-1``) ``pod`` to one node's ``requested`` and
    ``nonzero`` rows. Every requested resource must already have a column."""
    for name, amount in pod.requests.items():
        requested[resources[name]] += sign * amount
    requested[PODS_COL] += sign
    nonzero[0] += sign * pod.nonzero_cpu
    nonzero[1] += sign * pod.nonzero_memory


@dataclass(frozen=True, slots=True)
class Adjusted:
    """What :meth:`Snapshot.adjust` changed: its rows (``position`` maps a row to its
    index here), each row's pod map before, and the signed sums it added."""

    rows: NDArray[np.intp]
    position: Mapping[int, int]
    before: Sequence[Mapping[str, PodInfo]]
    deltas: Int64Array
    nonzero: Int64Array


@dataclass(frozen=True, slots=True)
class Snapshot:
    names: Sequence[str]
    index: Mapping[str, int]
    """Node name → row."""
    nodes: Sequence[Node]
    resources: Mapping[str, int]
    """Resource name → column."""
    allocatable: Int64Array
    requested: Int64Array
    nonzero_requested: Int64Array
    pods: Sequence[Mapping[str, PodInfo]]
    """Per row: pod UID → PodInfo of every pod counted on the node (bound or assumed)."""
    attributes: NodeAttributes
    """Node labels as columns (see framework.attributes), cached across pod changes."""
    pod_versions: Int64Array
    """Per row: a number that changes whenever the pods counted on the row change (added,
    removed, or replaced by a newer object of the same pod). An index over pods compares
    it with the copy it saw last to find the rows to look at, instead of every pod."""
    affinity_pods: int = -1
    """How many pods counted here set podAffinity or podAntiAffinity (-1: not known).
    0 lets InterPodAffinity skip without looking at any pod (upstream's Skip when no
    existing pod has affinity terms)."""

    @property
    def num_nodes(self) -> int:
        return len(self.names)

    def node_info(self, row: int) -> NodeInfo:
        cols = self.resources.items()
        return NodeInfo(
            name=self.names[row],
            node=self.nodes[row],
            allocatable={r: int(self.allocatable[row, c]) for r, c in cols},
            requested={r: int(self.requested[row, c]) for r, c in cols},
            nonzero_requested={
                CPU: int(self.nonzero_requested[row, 0]),
                MEMORY: int(self.nonzero_requested[row, 1]),
            },
            pods=tuple(self.pods[row].values()),
        )

    def with_pods(self, rows: Sequence[int], added: Mapping[int, Sequence[PodInfo]]) -> Snapshot:
        """A table of only ``rows`` (in that order), where each row also counts the pods
        ``added[row]``: the view the nominated-pods pass filters against. A resource
        no node had yet gets a new column (zero allocatable)."""
        resources = dict(self.resources)
        for extra_pods in added.values():
            for pod in extra_pods:
                for name in pod.requests:
                    resources.setdefault(name, len(resources))
        return self._take(rows, added, resources, 1)

    def without_pods(
        self, rows: Sequence[int], removed: Mapping[int, Sequence[PodInfo]]
    ) -> Snapshot:
        """A table of only ``rows`` (in that order), where each row no longer counts the
        pods ``removed[row]`` (preemption's victims), charged back exactly as
        :meth:`with_pods` charges them; columns stay as they are. Raises ``ValueError``
        if a pod is not counted on its row, or is named twice: removing it would corrupt
        the sums."""
        for row, pods in removed.items():
            on_row = self.pods[row]
            for pod in pods:
                if pod.uid not in on_row:
                    raise ValueError(f"pod {pod.key} is not on node {self.names[row]}")
            if len({pod.uid for pod in pods}) != len(pods):
                raise ValueError(f"a pod is named twice for node {self.names[row]}")
        return self._take(rows, removed, dict(self.resources), -1)

    def adjust(self, changed: Mapping[int, Sequence[PodInfo]], sign: int) -> Adjusted:
        """Add (``sign=1``) or remove (``-1``) pods on rows of this snapshot, in place:
        only for a view its caller made (:meth:`with_pods`, :meth:`without_pods`) and
        keeps to itself, such as preemption's dry runs. Every pod's requests must have
        columns; the rows changed get fresh ``pod_versions`` so no row cache reuses
        what it computed for them before. Returns what :meth:`undo` needs to take the
        change back on some of the rows."""
        resources = self.resources
        width = len(resources)
        rows = list(changed)
        deltas = [[0] * width for _ in rows]
        nonzero = [[0, 0] for _ in rows]
        maps = cast(list[Mapping[str, PodInfo]], self.pods)
        before = [maps[i] for i in rows]
        for k, i in enumerate(rows):
            maps[i] = _moved(maps[i], changed[i], sign, resources, deltas[k], nonzero[k])
        done = Adjusted(
            rows=np.asarray(rows, dtype=np.intp),
            position={row: k for k, row in enumerate(rows)},
            before=before,
            deltas=sign * np.asarray(deltas, dtype=np.int64).reshape(len(rows), width),
            nonzero=sign * np.asarray(nonzero, dtype=np.int64).reshape(len(rows), 2),
        )
        if rows:
            self.requested[done.rows] += done.deltas
            self.nonzero_requested[done.rows] += done.nonzero
            self.pod_versions[done.rows] = next(_VIEW_VERSIONS)
        return done

    def undo(self, done: Adjusted, rows: Sequence[int]) -> None:
        """Take back :meth:`adjust`'s change ``done`` on ``rows`` (some of its rows,
        unchanged since): their pod maps as they were, their sums back; a dry run's
        failed reprieves, without copying a pod map again. The rows get fresh
        ``pod_versions``."""
        if not rows:
            return
        pick = np.asarray([done.position[row] for row in rows], dtype=np.intp)
        at = done.rows[pick]
        self.requested[at] -= done.deltas[pick]
        self.nonzero_requested[at] -= done.nonzero[pick]
        maps = cast(list[Mapping[str, PodInfo]], self.pods)
        for row in rows:
            maps[row] = done.before[done.position[row]]
        self.pod_versions[at] = next(_VIEW_VERSIONS)

    def _take(
        self,
        rows: Sequence[int],
        changed: Mapping[int, Sequence[PodInfo]],
        resources: dict[str, int],
        sign: int,
    ) -> Snapshot:
        """``rows`` with ``changed[row]`` added (``sign=1``) or removed (``-1``);
        ``resources`` holds every column the changed pods request."""
        take = np.asarray(rows, dtype=np.intp)
        extra = len(resources) - len(self.resources)
        if extra:
            allocatable = np.pad(self.allocatable[take], ((0, 0), (0, extra)))
            requested = np.pad(self.requested[take], ((0, 0), (0, extra)))
        else:
            allocatable = self.allocatable[take]
            requested = self.requested[take]
        nonzero = self.nonzero_requested[take].copy()
        pods: list[Mapping[str, PodInfo]] = []
        width = len(resources)
        at: list[int] = []
        deltas: list[list[int]] = []
        sums: list[list[int]] = []
        cleared: list[int] = []
        for i, row in enumerate(rows):
            moved = changed.get(row)
            if not moved:
                pods.append(self.pods[row])  # unchanged: shared, never mutated
            elif sign < 0 and len(moved) == len(self.pods[row]):
                pods.append(_NO_PODS)  # every pod removed (each once): nothing counted
                cleared.append(i)
            else:
                delta, summed = [0] * width, [0, 0]
                pods.append(_moved(self.pods[row], moved, sign, resources, delta, summed))
                at.append(i)
                deltas.append(delta)
                sums.append(summed)
        if at:
            requested[at] += sign * np.asarray(deltas, dtype=np.int64)
            nonzero[at] += sign * np.asarray(sums, dtype=np.int64)
        if cleared:
            requested[cleared] = 0
            nonzero[cleared] = 0
        names = [self.names[r] for r in rows]
        return Snapshot(
            names=names,
            index={name: i for i, name in enumerate(names)},
            nodes=[self.nodes[r] for r in rows],
            resources=resources,
            allocatable=allocatable,
            requested=requested,
            nonzero_requested=nonzero,
            pods=pods,
            attributes=self.attributes.take(rows),
            pod_versions=np.full(len(rows), -1, dtype=np.int64),
        )
