"""InterPodAffinity's PreFilter, AddPod / RemovePod and Filter (upstream ``filtering.go``).

PreFilter counts, per topology pair:

- ``existing_anti``: existing pods whose required anti-affinity terms select the
  incoming pod (each matching term counts at its key's value on the pod's node);
- ``affinity``: existing pods that match *all* of the incoming pod's required affinity
  terms (counted once per term, at that term's key);
- ``anti``: existing pods matching each of the incoming pod's required anti-affinity
  terms.

It returns Skip when there is nothing to check: no existing anti-affinity match and no
required (anti-)affinity terms. Filter then rejects a node, checking in this order:

1. "node(s) didn't match pod affinity rules" (UnschedulableAndUnresolvable): the node
   lacks a term's topology key, or some term's pair has no matching pod — unless no pod
   matches anywhere and the pod matches its own terms (the first pod of a group);
2. "node(s) didn't match pod anti-affinity rules" (Unschedulable): a term's pair on the
   node has a matching pod;
3. "node(s) didn't satisfy existing pods anti-affinity rules" (Unschedulable): a pair
   of the node's labels has an existing pod whose anti-affinity selects the incoming pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np

from services.framework.api.interface import FilterResult
from services.framework.api.status import Code, Status
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.attributes import BoolArray
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.interpodaffinity.incoming import IncomingPod
from services.framework.plugins.interpodaffinity.index import PodIndex
from services.framework.plugins.interpodaffinity.terms import pod_namespace, pod_terms
from services.framework.plugins.interpodaffinity.topology import Accumulator, TopologyCounts

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

_PASS, _AFFINITY, _ANTI_AFFINITY, _EXISTING = 0, 1, 2, 3
_STATUSES: Final = {
    _AFFINITY: Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_AFFINITY_RULES_NOT_MATCH,)),
    _ANTI_AFFINITY: Status(Code.Unschedulable, (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,)),
    _EXISTING: Status(Code.Unschedulable, (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)),
}


@dataclass(slots=True)
class PreFilterState:
    """What PreFilter computed; cloned (counts copied) for the nominated-pods pass."""

    existing_anti: TopologyCounts
    affinity: TopologyCounts
    anti: TopologyCounts
    pod: IncomingPod
    nodes: Snapshot
    """The table the counts were built against (AddPod / RemovePod find nodes in it)."""

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.existing_anti.clone(),
            self.affinity.clone(),
            self.anti.clone(),
            self.pod,
            self.nodes,
        )

    def update_with_pod(self, other: PodInfo, node_labels: Mapping[str, str], sign: int) -> None:
        """``updateWithPod``: count (``sign=1``) or uncount (-1) ``other`` on a node."""
        terms = pod_terms(other.pod)
        for term in terms.required_anti_affinity:
            if self.pod.matched_by(term):
                _update(self.existing_anti, term.topology_key, node_labels, sign)
        namespace, labels = pod_namespace(other.pod), other.pod.metadata.labels
        own = self.pod.terms
        if own.required_affinity and all(
            t.matches(namespace, labels, None) for t in own.required_affinity
        ):
            for term in own.required_affinity:
                _update(self.affinity, term.topology_key, node_labels, sign)
        for term in own.required_anti_affinity:
            if term.matches(namespace, labels, None):
                _update(self.anti, term.topology_key, node_labels, sign)


def _update(counts: TopologyCounts, key: str, labels: Mapping[str, str], sign: int) -> None:
    value = labels.get(key)
    if value is not None:
        counts.update(key, value, sign)


def pre_filter_state(index: PodIndex, nodes: Snapshot, pod: IncomingPod) -> PreFilterState:
    """Count the matches over ``nodes`` (``index`` must be synced with it)."""
    existing = Accumulator(nodes.attributes)
    for group in index.affinity_groups:
        if not group:
            continue
        for term in group.terms.required_anti_affinity:
            if pod.matched_by(term):
                existing.add(term.topology_key, *group.arrays())
    affinity, anti = Accumulator(nodes.attributes), Accumulator(nodes.attributes)
    own = pod.terms
    if own.required_affinity:
        for lgroup in index.groups_matching_all(own.required_affinity):
            if lgroup:
                rows, counts = lgroup.arrays()
                for term in own.required_affinity:
                    affinity.add(term.topology_key, rows, counts)
    for term in own.required_anti_affinity:
        for lgroup in index.groups_matching(term):
            if lgroup:
                anti.add(term.topology_key, *lgroup.arrays())
    return PreFilterState(
        existing_anti=existing.result()[0],
        affinity=affinity.result()[0],
        anti=anti.result()[0],
        pod=pod,
        nodes=nodes,
    )


def should_skip(state: PreFilterState) -> bool:
    """Upstream's Skip: no existing pod's anti-affinity selects the pod and the pod has no
    required (anti-)affinity terms."""
    own = state.pod.terms
    return not own.required_affinity and not own.required_anti_affinity and not state.existing_anti


def filter_nodes(state: PreFilterState, nodes: Snapshot) -> FilterResult:
    """Filter over every node of ``nodes`` at once."""
    n = nodes.num_nodes
    per_node: dict[tuple[str, int], Int64Array] = {}

    def counts(which: TopologyCounts, tag: int, key: str) -> tuple[Int64Array, BoolArray]:
        """Per node: ``which``'s count at its value of ``key``, and whether it has ``key``."""
        column = nodes.attributes.label(key)
        got = per_node.get((key, tag))
        if got is None:
            got = per_node[(key, tag)] = which.per_node(key, column)
        return got, column.present()

    codes = np.zeros(n, dtype=np.int64)
    own = state.pod.terms
    existing = np.zeros(n, dtype=np.bool_)
    if state.existing_anti:
        for key in state.existing_anti.keys():
            existing |= counts(state.existing_anti, _EXISTING, key)[0] > 0
    codes[existing] = _EXISTING
    if own.required_anti_affinity and state.anti:
        anti = np.zeros(n, dtype=np.bool_)
        for term in own.required_anti_affinity:
            anti |= counts(state.anti, _ANTI_AFFINITY, term.topology_key)[0] > 0
        codes[anti] = _ANTI_AFFINITY
    if own.required_affinity:
        has_keys = np.ones(n, dtype=np.bool_)
        pods_exist = np.ones(n, dtype=np.bool_)
        for term in own.required_affinity:
            found, present = counts(state.affinity, _AFFINITY, term.topology_key)
            has_keys &= present
            pods_exist &= found > 0
        first_of_group = not state.affinity and state.pod.matches_own_affinity()
        failed = ~has_keys if first_of_group else ~(has_keys & pods_exist)
        codes[failed] = _AFFINITY
    return FilterResult(codes == _PASS, codes, _STATUSES.__getitem__)
