"""PreFilter, Filter and the PreFilter extensions for ``whenUnsatisfiable: DoNotSchedule``.

PreFilter counts, per constraint and topology domain, the pods its selector counts on
the *eligible* nodes: nodes having every constraint's topology key and passing that
constraint's node inclusion policies (upstream's ``TpValueToMatchNum``; a domain with
an eligible node is present even with 0 pods). Filter then rejects, constraint by
constraint, a node lacking the key (UnschedulableAndUnresolvable) or one where
``count(domain) + selfMatch - globalMin > maxSkew`` (Unschedulable). The global minimum
is the least count over present domains, or 0 while fewer than ``minDomains`` domains
are present. Domains are the codes of the node label column (framework.attributes), so
counting is a ``bincount`` over rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from services.framework.api.interface import CycleState, FilterResult
from services.framework.api.status import Code, Status
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.attributes import BoolArray, Int32Array, LabelColumn
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.podtopologyspread.common import (
    MAX_INT32,
    NAME,
    Constraint,
    included_rows,
    keys_present,
)
from services.framework.plugins.podtopologyspread.podindex import PodIndex, namespace_of

PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = (
    ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
)
_SKEW, _MISSING_LABEL = 1, 2
_STATUSES: Final = {
    _SKEW: Status(Code.Unschedulable, (ERR_REASON_CONSTRAINTS_NOT_MATCH,)),
    _MISSING_LABEL: Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_NODE_LABEL_NOT_MATCH,)),
}


@dataclass(slots=True)
class Spread:
    """One constraint's matching pods per topology domain (a code of ``column``)."""

    column: LabelColumn
    eligible: BoolArray
    """Per row of the PreFilter table: the node counts for this constraint."""
    counts: Int64Array
    """Per domain code: matching pods on the domain's eligible nodes."""
    present: BoolArray
    """Per domain code: the domain has an eligible node (or an added pod)."""

    def clone(self) -> Spread:
        return Spread(self.column, self.eligible, self.counts.copy(), self.present.copy())

    def min_match(self, min_domains: int) -> int:
        """``minMatchNum``: the global minimum, 0 below ``minDomains`` domains."""
        domains = int(np.count_nonzero(self.present))
        if domains < min_domains:
            return 0
        return int(self.counts[self.present].min()) if domains else MAX_INT32

    def domains_of(self, column: LabelColumn) -> Int32Array:
        """Per row of ``column``'s table: its domain code here, -1 if none."""
        if column is self.column:
            return column.codes
        lookup = {value: code for code, value in enumerate(self.column.values)}
        translated = [lookup.get(value, -1) for value in column.values]
        return np.asarray([*translated, -1], dtype=np.int32)[column.codes]


@dataclass(slots=True)
class PreFilterState:
    constraints: tuple[Constraint, ...]
    spreads: list[Spread]
    index: Mapping[str, int]
    """Node name → row of the PreFilter table (for AddPod / RemovePod)."""
    has_keys: BoolArray
    """Per row: the node has every constraint's topology key."""

    def clone(self) -> PreFilterState:
        spreads = [s.clone() for s in self.spreads]
        return PreFilterState(self.constraints, spreads, self.index, self.has_keys)


def pre_filter_state(
    pod: PodInfo, constraints: Sequence[Constraint], nodes: Snapshot, pods: PodIndex
) -> PreFilterState:
    """``calPreFilterState`` for non-empty ``constraints``."""
    has_keys = keys_present(constraints, nodes)
    namespace = namespace_of(pod)
    spreads = []
    for c, included in zip(constraints, included_rows(pod.pod, constraints, nodes), strict=True):
        column = nodes.attributes.label(c.topology_key)
        eligible = has_keys & included
        domains = column.codes[eligible]
        size = len(column.values)
        matching = pods.row_counts(nodes, namespace, c.selector)[eligible]
        counts = np.bincount(domains, weights=matching, minlength=size).astype(np.int64)
        present = np.bincount(domains, minlength=size) > 0
        spreads.append(Spread(column, eligible, counts, present))
    return PreFilterState(tuple(constraints), spreads, nodes.index, has_keys)


def filter_nodes(state: PreFilterState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
    """``Filter`` over every node, constraint by constraint in the pod's order."""
    n = nodes.num_nodes
    codes = np.zeros(n, dtype=np.int64)
    undecided = np.ones(n, dtype=np.bool_)
    for c, spread in zip(state.constraints, state.spreads, strict=True):
        column = nodes.attributes.label(c.topology_key)
        has_key = column.codes >= 0
        codes[undecided & ~has_key] = _MISSING_LABEL
        undecided &= has_key
        matching = np.append(spread.counts, 0)[spread.domains_of(column)]
        self_match = 1 if c.selector.matches(pod.pod.metadata.labels) else 0
        skew = matching + self_match - spread.min_match(c.min_domains)
        over = undecided & (skew > c.max_skew)
        codes[over] = _SKEW
        undecided &= ~over
    return FilterResult(codes == 0, codes, _STATUSES.__getitem__)


def update_with_pod(
    state: PreFilterState, preemptor: PodInfo, pod: PodInfo, node: str, delta: int
) -> None:
    """``updateWithPod``: count ``pod`` on ``node`` (``delta`` 1) or stop counting it
    (-1), where the preemptor's constraints count it."""
    row = state.index.get(node)
    if row is None or row >= len(state.has_keys) or not state.has_keys[row]:
        return
    if namespace_of(pod) != namespace_of(preemptor):
        return
    for c, spread in zip(state.constraints, state.spreads, strict=True):
        if not c.selector.matches(pod.pod.metadata.labels) or not spread.eligible[row]:
            continue
        domain = int(spread.column.codes[row])
        spread.counts[domain] += delta
        spread.present[domain] = True


def read_state(state: CycleState) -> PreFilterState:
    return state.read(PRE_FILTER_STATE_KEY, PreFilterState)
