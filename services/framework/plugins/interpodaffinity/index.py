"""An index of the pods on a node table, grouped the way InterPodAffinity asks about them.

Upstream walks every pod on every node for each incoming pod. Here pods are grouped:

- :class:`LabelGroup`: pods with the same namespace and labels. Whether an incoming
  pod's term selects a pod depends only on those, so a term is matched once per group
  (and remembered: groups are append-only, so a term only ever checks new groups).
- :class:`AffinityGroup`: pods with the same processed terms (``framework.PodInfo``'s
  affinity fields). Whether such a pod's term selects the incoming pod is decided once
  per group.

Each group knows the node rows its pods run on (row → pod count), so a topology count
is a ``np.bincount`` over those rows' label codes.

The index follows one snapshot's node table from cycle to cycle without a full scan:
rows whose pod count changed are diffed, then one C-level comparison of the per-row pod
maps catches in-place updates (a relabelled pod). When the node rows themselves change
(a node added or removed) the index is rebuilt, reusing what it parsed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.interpodaffinity.terms import (
    AffinityTerm,
    PodTerms,
    has_pod_affinity,
    pod_namespace,
    pod_terms,
)

_MATCH_CACHE_LIMIT: Final = 1024


class Group:
    """Pods sharing a key, by node row (row → number of pods)."""

    __slots__ = ("_arrays", "rows")

    def __init__(self) -> None:
        self.rows: dict[int, int] = {}
        self._arrays: tuple[NDArray[np.intp], Int64Array] | None = None

    def __bool__(self) -> bool:
        return bool(self.rows)

    def add(self, row: int, delta: int) -> None:
        count = self.rows.get(row, 0) + delta
        if count:
            self.rows[row] = count
        else:
            del self.rows[row]
        self._arrays = None

    def clear(self) -> None:
        self.rows.clear()
        self._arrays = None

    def arrays(self) -> tuple[NDArray[np.intp], Int64Array]:
        """The rows and the pod count on each, as arrays (cached until a change)."""
        if self._arrays is None:
            n = len(self.rows)
            self._arrays = (
                np.fromiter(self.rows.keys(), dtype=np.intp, count=n),
                np.fromiter(self.rows.values(), dtype=np.int64, count=n),
            )
        return self._arrays


class LabelGroup(Group):
    __slots__ = ("labels", "namespace")

    def __init__(self, namespace: str, labels: Mapping[str, str]) -> None:
        super().__init__()
        self.namespace = namespace
        self.labels = labels


class AffinityGroup(Group):
    __slots__ = ("terms",)

    def __init__(self, terms: PodTerms) -> None:
        super().__init__()
        self.terms = terms


@dataclass(slots=True)
class _Entry:
    info: PodInfo
    row: int
    labels: LabelGroup
    affinity: AffinityGroup | None


@dataclass(slots=True)
class _Matches:
    checked: int
    groups: list[LabelGroup]


class PodIndex:
    """The pods of the node table last passed to :meth:`sync`."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._label_keys: dict[tuple[str, frozenset[tuple[str, str]]], LabelGroup] = {}
        self.label_groups: list[LabelGroup] = []
        self._affinity_keys: dict[PodTerms, AffinityGroup] = {}
        self.affinity_groups: list[AffinityGroup] = []
        self._matches: dict[object, _Matches] = {}
        self._entries: dict[str, _Entry] = {}
        self._table: Snapshot | None = None
        self._pods: Sequence[Mapping[str, PodInfo]] | None = None
        self._names: list[str] = []
        self._seen: list[dict[str, PodInfo]] = []
        self._versions: Int64Array = np.zeros(0, dtype=np.int64)
        """``Snapshot.pod_versions`` as last synced: rows whose value moved are diffed."""
        self._attributes: object = None
        """The NodeAttributes last seen (replaced by the snapshot when nodes change)."""

    @property
    def pods(self) -> Sequence[Mapping[str, PodInfo]] | None:
        """The per-row pod maps this index follows (a table's ``pods``)."""
        return self._pods

    # -- queries ------------------------------------------------------------------

    def groups_matching(self, term: AffinityTerm) -> list[LabelGroup]:
        """Label groups (possibly empty ones) whose pods ``term`` selects, for an
        incoming pod's term (namespace selector already merged)."""
        return self._matching(term, (term,))

    def groups_matching_all(self, terms: tuple[AffinityTerm, ...]) -> list[LabelGroup]:
        """Label groups whose pods every one of ``terms`` selects."""
        return self._matching(terms, terms)

    def _matching(self, key: object, terms: tuple[AffinityTerm, ...]) -> list[LabelGroup]:
        found = self._matches.get(key)
        if found is None:
            if len(self._matches) >= _MATCH_CACHE_LIMIT:
                self._matches.clear()
            found = self._matches[key] = _Matches(0, [])
        groups = self.label_groups
        for group in groups[found.checked :]:
            if all(t.matches(group.namespace, group.labels, None) for t in terms):
                found.groups.append(group)
        found.checked = len(groups)
        return found.groups

    # -- following the table --------------------------------------------------------

    def sync(self, nodes: Snapshot) -> None:
        """Bring the index up to date with ``nodes``."""
        if nodes is self._table:
            return
        versions = nodes.pod_versions
        names = nodes.names if isinstance(nodes.names, list) else list(nodes.names)
        if (
            nodes.pods is not self._pods
            or len(versions) != len(self._versions)
            or (nodes.attributes is not self._attributes and names != self._names)
        ):
            self._rebuild(nodes)
        else:
            for row in np.flatnonzero(versions != self._versions).tolist():
                self._diff_row(nodes.pods, row)
        self._versions = versions.copy()
        self._attributes = nodes.attributes
        self._table = nodes

    def _rebuild(self, nodes: Snapshot) -> None:
        if len(self.label_groups) > 4 * len(self._entries) + 1024:
            self._reset()  # drop the groups of long-gone pods
        for group in self.label_groups:
            group.clear()
        for agroup in self.affinity_groups:
            agroup.clear()
        old, self._entries = self._entries, {}
        self._pods = nodes.pods
        self._names = list(nodes.names)
        self._seen = [dict(on_node) for on_node in nodes.pods]
        for row, on_node in enumerate(self._seen):
            for uid, info in on_node.items():
                entry = old.get(uid)
                if entry is not None and entry.info is info:
                    self._place(uid, _Entry(info, row, entry.labels, entry.affinity))
                else:
                    self._add(uid, info, row)

    def _diff_row(self, pods: Sequence[Mapping[str, PodInfo]], row: int) -> None:
        live, seen = pods[row], self._seen[row]
        for uid, info in seen.items():
            if live.get(uid) is not info:
                self._remove(uid, row)
        for uid, info in live.items():
            if seen.get(uid) is not info:
                self._add(uid, info, row)
        self._seen[row] = dict(live)

    def _add(self, uid: str, info: PodInfo, row: int) -> None:
        pod = info.pod
        namespace = pod_namespace(pod)
        key = (namespace, frozenset(pod.metadata.labels.items()))
        labels = self._label_keys.get(key)
        if labels is None:
            labels = self._label_keys[key] = LabelGroup(namespace, pod.metadata.labels)
            self.label_groups.append(labels)
        affinity = None
        if has_pod_affinity(pod):
            terms = pod_terms(pod)
            if terms.has_terms:
                affinity = self._affinity_keys.get(terms)
                if affinity is None:
                    affinity = self._affinity_keys[terms] = AffinityGroup(terms)
                    self.affinity_groups.append(affinity)
        self._place(uid, _Entry(info, row, labels, affinity))

    def _place(self, uid: str, entry: _Entry) -> None:
        previous = self._entries.get(uid)
        if previous is not None:
            self._remove(uid, previous.row)
        self._entries[uid] = entry
        entry.labels.add(entry.row, 1)
        if entry.affinity is not None:
            entry.affinity.add(entry.row, 1)

    def _remove(self, uid: str, row: int) -> None:
        entry = self._entries.get(uid)
        if entry is None or entry.row != row:
            return
        del self._entries[uid]
        entry.labels.add(row, -1)
        if entry.affinity is not None:
            entry.affinity.add(row, -1)
