"""RequestedToCapacityRatio: score each resource's utilization with a user-drawn shape.

The shape's points (utilization 0-100 %, score 0-10) are scaled to MaxNodeScore
(score * 10) and joined into a broken-linear function (``BuildBrokenLinearFunction``,
integer arithmetic truncating toward zero). Per resource the utilization is
``requested * 100 / capacity`` (exact, at most 100; a full or over-requested node reads
100). Only resources scoring above 0 count: the node score is
``round(Σ score·weight / Σ weight)`` over them (``math.Round``, halves away from 0),
0 when none does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from services.framework.api.interface import Rows
from services.framework.api.types import MAX_NODE_SCORE, Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.helper.intdiv import go_div
from services.framework.plugins.noderesources.args import (
    MAX_CUSTOM_PRIORITY_SCORE,
    ResourceSpec,
    UtilizationShapePoint,
)
from services.framework.plugins.noderesources.resource_allocation import ResourceAllocationScorer

NAME: Final = "RequestedToCapacityRatio"
MAX_UTILIZATION: Final = 100
_EXACT_LIMIT: Final = (2**63 - 1) // MAX_UTILIZATION
"""Above this many units a request times 100 would overflow int64."""

FunctionShape = tuple[tuple[int, int], ...]
"""(utilization, score on the MaxNodeScore scale) points, by increasing utilization."""


def scaled_shape(points: Sequence[UtilizationShapePoint]) -> FunctionShape:
    """The configured shape with scores moved onto the 0-MaxNodeScore scale."""
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple((p.utilization, p.score * factor) for p in points)


def broken_linear(shape: FunctionShape, p: Int64Array) -> Int64Array:
    """``BuildBrokenLinearFunction`` applied to every value of ``p``: the first point
    at or after ``p`` decides; left of the first point its score, right of the last
    the last score, in between linear interpolation."""
    result = np.full(len(p), shape[-1][1], dtype=np.int64)
    for i in range(len(shape) - 1, -1, -1):  # the smallest i with p <= u_i wins
        utilization, score = shape[i]
        if i == 0:
            value: Int64Array | int = score
        else:
            u0, s0 = shape[i - 1]
            value = s0 + go_div((score - s0) * (p - u0), utilization - u0)
        result = np.where(p <= utilization, value, result)
    return result


def scaled_utilization(requested: Int64Array, capacity: Int64Array) -> Int64Array:
    """``scaledUtilization``: ``requested * 100 / capacity`` exactly, clamped to
    [0, 100]; 100 where the request reaches the capacity, 0 without capacity."""
    safe = np.maximum(capacity, 1)
    clamped = np.clip(requested, 0, safe)
    if clamped.size and int(clamped.max()) > _EXACT_LIMIT:
        exact = [
            r * MAX_UTILIZATION // c for r, c in zip(clamped.tolist(), safe.tolist(), strict=True)
        ]
        utilization = np.asarray(exact, dtype=np.int64)
    else:
        utilization = clamped * MAX_UTILIZATION // safe
    return np.where((capacity <= 0) | (requested <= 0), 0, utilization)


@dataclass(frozen=True, slots=True)
class RequestedToCapacityRatioScorer:
    """NodeResourcesFit's RequestedToCapacityRatio strategy over the node table."""

    resources: tuple[ResourceSpec, ...]
    shape: FunctionShape
    """The configured shape, scaled (:func:`scaled_shape`)."""

    @property
    def name(self) -> str:
        return NAME

    @property
    def requests(self) -> ResourceAllocationScorer:
        """Gathers requested and allocatable amounts as the other strategies do
        (non-zero requests for cpu and memory)."""
        return ResourceAllocationScorer(name=NAME, resources=self.resources)

    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        return self.requests.pod_requests(pod)

    def score(self, nodes: Snapshot, rows: Rows, pod_requests: Sequence[int]) -> Int64Array:
        base = self.requests
        node_score = np.zeros(len(rows), dtype=np.int64)
        weight_sum = np.zeros(len(rows), dtype=np.int64)
        for spec, pod_request in zip(self.resources, pod_requests, strict=True):
            pair = base.allocatable_requested(nodes, rows, spec.name, pod_request)
            if pair is None:
                continue
            allocatable, requested = pair
            over = requested > allocatable
            utilization = np.where(
                over, MAX_UTILIZATION, scaled_utilization(requested, allocatable)
            )
            resource_score = broken_linear(self.shape, utilization)
            counted = (allocatable != 0) & (resource_score > 0)
            node_score += np.where(counted, resource_score * spec.weight, 0)
            weight_sum += np.where(counted, spec.weight, 0)
        ratio = node_score / np.maximum(weight_sum, 1)
        rounded = np.where(ratio - np.floor(ratio) >= 0.5, np.ceil(ratio), np.floor(ratio))
        return np.where(weight_sum == 0, 0, rounded).astype(np.int64)
