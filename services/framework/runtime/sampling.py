"""Node sampling: ``percentageOfNodesToScore`` as upstream's ``findNodesThatPassFilters``.

Upstream stops filtering once it has found ``numFeasibleNodesToFind`` feasible nodes,
checking nodes from where the previous cycle stopped (``nextStartNodeIndex``), so
that every node gets its turn. ksched's filters see every node at once (cheap), so
sampling happens afterwards: walk the candidates in rotated order and keep the first
``k`` that passed. What counts as processed is what upstream's search, run with one
worker, would have checked: its ``checkNode`` cancels the search when it meets the
``(k+1)``-th feasible node, so the rejected nodes between the ``k``-th and that one
are processed too (they are in the Diagnosis and advance the rotation).

ksched applies this only when the configuration sets ``percentageOfNodesToScore``
(profile or global); otherwise every feasible node is scored (see the README).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

MIN_FEASIBLE_NODES_TO_FIND = 100
"""``minFeasibleNodesToFind``: never score fewer nodes than this (when there are as many)."""
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
"""``minFeasibleNodesPercentageToFind``: the floor of the adaptive percentage."""

Rows = NDArray[np.intp]


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind``: how many feasible nodes end the search among
    ``num_all_nodes`` candidates. ``percentage`` 0 is adaptive: 50% minus one point
    per 125 nodes, at least 5%. Small clusters (< 100 nodes) are searched whole."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(frozen=True, slots=True)
class Sample:
    """The outcome of one sampled search over the candidates."""

    feasible: Rows
    """The feasible rows kept, in the order the search met them (at most ``k``)."""
    processed: Rows
    """Every row the search checked, in order: the kept feasible ones and the rejected
    ones before the search stopped. ``len(processed)`` is upstream's
    ``len(feasibleNodes) + diagnosis.NodeToStatus.Len()``."""


def first_feasible(candidates: Rows, passed: NDArray[np.bool_], start: int, k: int) -> Sample:
    """Search ``candidates`` (table rows, in list order) from position ``start``
    (modulo their number, wrapping around) and keep the first ``k`` rows that
    ``passed``; see the module docstring for what counts as processed."""
    n = len(candidates)
    if n == 0:
        return Sample(candidates, candidates)
    rotated = np.roll(candidates, -(start % n))
    positions = np.flatnonzero(passed[rotated])
    if len(positions) <= k:
        return Sample(rotated[positions], rotated)
    stop = int(positions[k])
    return Sample(rotated[positions[:k]], rotated[:stop])


class StartIndex:
    """``nextStartNodeIndex``: where the next sampled search begins. It advances by the
    number of processed nodes, modulo the number of nodes in the snapshot."""

    def __init__(self) -> None:
        self.value = 0

    def advance(self, processed: int, num_all_nodes: int) -> None:
        if num_all_nodes:
            self.value = (self.value + processed) % num_all_nodes
