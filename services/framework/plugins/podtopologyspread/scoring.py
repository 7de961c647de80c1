"""PreScore, Score and NormalizeScore for ``whenUnsatisfiable: ScheduleAnyway``.

Upstream's arithmetic, over arrays:

- PreScore: nodes to score that lack a constraint's key are *ignored* (unless the
  constraints are the system defaults, where a node without a zone is one more zone,
  the value ""). Each constraint gets the weight ``log(size + 2)``, size being the
  number of its domains among the scored, not ignored nodes (for the hostname key:
  their number). Matching pods are then counted per domain over every node that has
  the keys and passes the constraint's node inclusion policies; hostname domains are
  counted per node at Score.
- Score: ``round(sum(count(domain) * weight + maxSkew - 1))`` over the constraints
  whose key the node has (Go's ``math.Round``: halves away from zero); ignored nodes
  score 0.
- NormalizeScore: the fewest matching pods score best,
  ``100 * (max + min - score) / max`` in integer arithmetic over the nodes not ignored;
  100 for all when ``max`` is 0; ignored nodes get 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from services.framework.api.interface import CycleState, Rows
from services.framework.api.types import MAX_NODE_SCORE, Int64Array, PodInfo
from services.framework.cache.attributes import BoolArray, Int32Array
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    NAME,
    Constraint,
    included_rows,
    keys_present,
)
from services.framework.plugins.podtopologyspread.podindex import PodIndex, namespace_of

PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Scored:
    """One constraint's part of a score, for the scored rows."""

    max_skew: int
    weight: float
    has_key: BoolArray
    counts: Int64Array
    """Matching pods in each scored row's domain (per node for the hostname key)."""


@dataclass(frozen=True, slots=True)
class PreScoreState:
    constraints: tuple[Constraint, ...]
    ignored: BoolArray
    """Per scored row: the node misses a topology key and scores 0."""
    parts: tuple[Scored, ...]

    def clone(self) -> PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    """``topologyNormalizingWeight``."""
    return math.log(size + 2)


def _domain_codes(codes: Int32Array, values: Sequence[str]) -> Int32Array:
    """Label codes with a missing label read as the value "" (``node.Labels[key]``):
    the code of "" if some node has it (values are sorted, so it is 0), else a new one."""
    empty = 0 if values and values[0] == "" else len(values)
    return np.where(codes >= 0, codes, empty).astype(np.int32)


def pre_score_state(
    pod: PodInfo,
    constraints: Sequence[Constraint],
    nodes: Snapshot,
    rows: Rows,
    require_all_keys: bool,
    pods: PodIndex,
) -> PreScoreState:
    """``initPreScoreState`` and the counting of ``PreScore``, for non-empty constraints."""
    has_keys = keys_present(constraints, nodes)
    ignored = ~has_keys[rows] if require_all_keys else np.zeros(len(rows), dtype=np.bool_)
    kept = rows[~ignored]
    namespace = namespace_of(pod)
    parts = []
    for c, included in zip(constraints, included_rows(pod.pod, constraints, nodes), strict=True):
        column = nodes.attributes.label(c.topology_key)
        row_counts = pods.row_counts(nodes, namespace, c.selector)
        if c.topology_key == LABEL_HOSTNAME:
            weight = topology_normalizing_weight(len(kept))
            counts = row_counts[rows]
        else:
            domains = _domain_codes(column.codes, column.values)
            size = len(column.values) + 1
            scored_domains = np.bincount(domains[kept], minlength=size) > 0
            weight = topology_normalizing_weight(int(np.count_nonzero(scored_domains)))
            counted = included & has_keys if require_all_keys else included
            counted &= scored_domains[domains]
            by_domain = np.bincount(domains[counted], weights=row_counts[counted], minlength=size)
            counts = by_domain.astype(np.int64)[domains[rows]]
        parts.append(Scored(c.max_skew, weight, column.codes[rows] >= 0, counts))
    return PreScoreState(tuple(constraints), ignored, tuple(parts))


def go_round(values: FloatArray) -> Int64Array:
    """``math.Round``: to the nearest integer, halves away from zero."""
    truncated = np.trunc(values)
    away = np.abs(values - truncated) >= 0.5
    rounded: Int64Array = (truncated + np.copysign(away, values)).astype(np.int64)
    return rounded


def score(state: PreScoreState) -> Int64Array:
    """``Score`` for every scored row."""
    total = np.zeros(len(state.ignored), dtype=np.float64)
    for part in state.parts:
        credit = part.counts.astype(np.float64) * part.weight + float(part.max_skew - 1)
        total = total + np.where(part.has_key, credit, 0.0)
    return np.where(state.ignored, 0, go_round(total))


def normalize(state: PreScoreState, scores: Int64Array) -> Int64Array:
    """``NormalizeScore``."""
    valid = ~state.ignored
    if not valid.any():
        return np.zeros(len(scores), dtype=np.int64)
    lowest = int(scores[valid].min())
    highest = max(int(scores[valid].max()), 0)
    if highest == 0:
        return np.where(valid, MAX_NODE_SCORE, 0).astype(np.int64)
    normalized = MAX_NODE_SCORE * (highest + lowest - scores) // highest
    return np.where(valid, normalized, 0).astype(np.int64)


def read_state(state: CycleState) -> PreScoreState:
    return state.read(PRE_SCORE_STATE_KEY, PreScoreState)
