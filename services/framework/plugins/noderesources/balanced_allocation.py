"""NodeResourcesBalancedAllocation: favour nodes whose resources would be used evenly.

Per node and configured resource (cpu and memory by default) the fraction
``requested / allocatable`` with the pod added, on plain requests (not the non-zero
defaults), capped at 1; resources the node lacks are left out, as are extended
resources the pod does not request. The score is ``(1 - std) * 100`` truncated, where
``std`` is ``|f1 - f2| / 2`` for two fractions and the population standard deviation
for more (0 for fewer), in float64 and in upstream's order of operations. PreScore
returns Skip for a pod that requests none of the resources (best effort), so such pods
do not all pile onto the emptiest node. Default weight 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from services.framework.api.interface import CycleState, Handle, PreScorePlugin, Rows, ScorePlugin
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SKIP, SUCCESS, Status, StatusError
from services.framework.api.types import MAX_NODE_SCORE, Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs
from services.framework.plugins.noderesources.resource_allocation import (
    SCORES,
    ResourceAllocationScorer,
)

NAME: Final = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]

    def clone(self) -> _PreScoreState:
        return self


def _scores(std: Float64Array | float, n: int) -> Int64Array:
    """``int64((1 - std) * MaxNodeScore)``, truncating as Go's conversion does."""
    scores: Int64Array = np.asarray((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return scores if scores.ndim else np.full(n, int(scores), dtype=np.int64)


def balanced_scores(fractions: Sequence[tuple[Float64Array, BoolArray]]) -> Int64Array:
    """``balancedResourceScorer`` for every node: ``fractions`` holds, per resource in
    order, the capped fractions and where the node has the resource."""
    n = len(fractions[0][0])
    if all(present.all() for _, present in fractions):  # every node has every resource
        return _uniform_scores([f for f, _ in fractions], n)
    count = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    for fraction, present in fractions:
        first = np.where(present & (count == 0), fraction, first)
        second = np.where(present & (count == 1), fraction, second)
        total = total + np.where(present, fraction, 0.0)  # adding 0.0 keeps Go's sum
        count = count + present
    std = np.zeros(n, dtype=np.float64)
    two = count == 2
    std[two] = np.abs((first[two] - second[two]) / 2)
    many = count > 2
    if many.any():
        mean = total / np.maximum(count, 1)
        squares = np.zeros(n, dtype=np.float64)
        for fraction, present in fractions:
            squares = squares + np.where(present, (fraction - mean) * (fraction - mean), 0.0)
        std[many] = np.sqrt(squares[many] / count[many])
    return _scores(std, n)


def _uniform_scores(fractions: Sequence[Float64Array], n: int) -> Int64Array:
    """The same computation when every node has all ``fractions``' resources."""
    if len(fractions) < 2:
        return _scores(0.0, n)
    if len(fractions) == 2:
        return _scores(np.abs((fractions[0] - fractions[1]) / 2), n)
    total = fractions[0]
    for fraction in fractions[1:]:
        total = total + fraction
    mean = total / len(fractions)
    squares = (fractions[0] - mean) * (fractions[0] - mean)
    for fraction in fractions[1:]:
        squares = squares + (fraction - mean) * (fraction - mean)
    return _scores(np.sqrt(squares / len(fractions)), n)


class BalancedAllocation(PreScorePlugin, ScorePlugin):
    name: Final = NAME

    def __init__(self, args: NodeResourcesBalancedAllocationArgs) -> None:
        self.requests = ResourceAllocationScorer(
            name=NAME, resources=args.defaulted().resources, use_requested=True
        )

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status:
        requests = self.requests.pod_requests(pod)
        if not any(requests):  # isBestEffortPod
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(requests))
        return SUCCESS

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        try:
            requests = state.read(PRE_SCORE_STATE_KEY, _PreScoreState).pod_requests
        except StatusError:
            requests = self.requests.pod_requests(pod)
            if not any(requests):
                return np.zeros(len(rows), dtype=np.int64)
        if not self.requests.resources:
            raise StatusError("resources not found")
        return SCORES.values(
            nodes,
            rows,
            (NAME, self.requests, requests),
            lambda some: self._score_rows(nodes, some, requests),
        )

    def _score_rows(self, nodes: Snapshot, rows: Rows, requests: tuple[int, ...]) -> Int64Array:
        fractions = []
        for spec, pod_request in zip(self.requests.resources, requests, strict=True):
            pair = self.requests.allocatable_requested(nodes, rows, spec.name, pod_request)
            if pair is None:
                continue
            allocatable, requested = pair
            present = allocatable != 0
            divisor = allocatable if present.all() else np.where(present, allocatable, 1)
            ratio = requested.astype(np.float64) / divisor
            fractions.append((np.minimum(ratio, 1.0), present))
        if not fractions:
            return np.full(len(rows), MAX_NODE_SCORE, dtype=np.int64)
        return balanced_scores(fractions)


def new(args: NodeResourcesBalancedAllocationArgs | None, handle: Handle) -> BalancedAllocation:
    return BalancedAllocation(args or NodeResourcesBalancedAllocationArgs().defaulted())


ENTRY: Final = PluginEntry(NAME, BalancedAllocation, new, NodeResourcesBalancedAllocationArgs)
