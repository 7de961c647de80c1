"""InterPodAffinity's PreScore, Score and NormalizeScore (upstream ``scoring.go``).

PreScore sums weights per topology pair (``topologyScore``):

- for each preferred affinity (anti-affinity) term of the incoming pod, +weight
  (-weight) for every existing pod the term selects, at the term's key on that pod's
  node;
- for each existing pod with affinity terms that select the incoming pod:
  +hardPodAffinityWeight per required affinity term (when the weight is > 0), +weight
  per preferred affinity term and -weight per preferred anti-affinity term, at the
  term's key on the existing pod's node.

It returns Skip when ``ignorePreferredTermsOfExistingPods`` is set and the incoming pod
has no preferred terms, and when no pair was touched at all. Score is the sum, over the
keys, of the node's pair; NormalizeScore scales linearly from the minimum (0) to the
maximum (100) of the scored nodes, truncating as ``int64(float64)`` does, and gives
every node 0 when all scores are equal (negative scores included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from services.framework.api.interface import Rows
from services.framework.api.types import MAX_NODE_SCORE, Int64Array
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.interpodaffinity.incoming import IncomingPod
from services.framework.plugins.interpodaffinity.index import AffinityGroup, PodIndex
from services.framework.plugins.interpodaffinity.topology import Accumulator, TopologyCounts

PRE_SCORE_STATE_KEY: Final = "PreScoreInterPodAffinity"


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """``topologyScore``: topology key → value → summed weight. Read-only after PreScore."""

    scores: TopologyCounts

    def clone(self) -> PreScoreState:
        return self


def has_preferred_terms(pod: IncomingPod) -> bool:
    return bool(pod.terms.preferred_affinity or pod.terms.preferred_anti_affinity)


def pre_score_state(
    index: PodIndex, nodes: Snapshot, pod: IncomingPod, hard_weight: int
) -> PreScoreState | None:
    """The summed weights over ``nodes`` (``index`` synced with it); None means Skip."""
    sums = Accumulator(nodes.attributes)
    own = pod.terms
    for sign, weighted in ((1, own.preferred_affinity), (-1, own.preferred_anti_affinity)):
        for term in weighted:
            for lgroup in index.groups_matching(term.term):
                if lgroup:
                    rows, counts = lgroup.arrays()
                    sums.add(term.term.topology_key, rows, counts * (sign * term.weight))
    for group in index.affinity_groups:
        if group and group.terms.has_existing_pod_terms:
            weights = _weights_for(group, pod, hard_weight)
            if weights:
                rows, counts = group.arrays()
                for key, weight in weights.items():
                    sums.add(key, rows, counts * weight)
    scores, touched = sums.result()
    return PreScoreState(scores) if touched else None


def _weights_for(group: AffinityGroup, pod: IncomingPod, hard_weight: int) -> dict[str, int]:
    """Per topology key, the weight one pod of ``group`` adds for the incoming pod."""
    weights: dict[str, int] = {}
    terms = group.terms
    if hard_weight > 0:
        for term in terms.required_affinity:
            if pod.matched_by(term):
                weights[term.topology_key] = weights.get(term.topology_key, 0) + hard_weight
    for sign, weighted in ((1, terms.preferred_affinity), (-1, terms.preferred_anti_affinity)):
        for wterm in weighted:
            if pod.matched_by(wterm.term):
                key = wterm.term.topology_key
                weights[key] = weights.get(key, 0) + sign * wterm.weight
    return weights


def score_rows(state: PreScoreState, nodes: Snapshot, rows: Rows) -> Int64Array:
    """Score for each of ``rows``: the sum of its pairs' weights."""
    total = np.zeros(len(rows), dtype=np.int64)
    for key in state.scores.keys():
        column = nodes.attributes.label(key)
        total += state.scores.per_node(key, column)[rows]
    return total


def normalize(scores: Int64Array) -> Int64Array:
    """``NormalizeScore``: min-max scaling into [0, MaxNodeScore]."""
    if len(scores) == 0:
        return scores
    low, high = int(scores.min()), int(scores.max())
    spread = high - low
    if spread <= 0:
        return np.zeros(len(scores), dtype=np.int64)
    scaled = float(MAX_NODE_SCORE) * ((scores - low).astype(np.float64) / float(spread))
    return scaled.astype(np.int64)
