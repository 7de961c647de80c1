"""``resourceAllocationScorer``: the shared part of the resource scoring strategies.

For each configured resource it gathers, over the scored nodes, the allocatable amount
and the amount requested including the incoming pod, exactly as upstream's
``calculateResourceAllocatableRequest`` does, then hands both arrays to the strategy
(``leastRequestedScore``, ``mostRequestedScore``) and takes the weighted average over
the resources the node has (allocatable ≠ 0), in Go's integer arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from services.common.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name
from services.framework.api.interface import Rows
from services.framework.api.status import StatusError
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.rowcache import RowCache
from services.framework.cache.snapshot import CPU_COL, EPHEMERAL_COL, MEMORY_COL, Snapshot
from services.framework.plugins.helper.intdiv import go_div
from services.framework.plugins.noderesources.args import ResourceSpec

SCORES = RowCache()
"""Scores per node of every strategy built on this scorer, by (scorer, pod requests)."""

ResourceScorer = Callable[[Int64Array, Int64Array], Int64Array]
"""``(requested, capacity) -> score`` per node, for capacity ≠ 0 (zeros are masked)."""


class NodeScorer(Protocol):
    """What NodeResourcesFit's Score needs from a scoring strategy."""

    @property
    def name(self) -> str:
        """The strategy's type (``LeastAllocated``...)."""
        ...

    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]: ...

    def score(self, nodes: Snapshot, rows: Rows, pod_requests: Sequence[int]) -> Int64Array: ...


@dataclass(frozen=True, slots=True)
class ResourceAllocationScorer:
    name: str
    resources: tuple[ResourceSpec, ...]
    scorer: ResourceScorer | None = None
    """The per-resource strategy :meth:`score` averages; None for strategies that
    combine the resources themselves (RequestedToCapacityRatio, BalancedAllocation)
    and use only :meth:`pod_requests` and :meth:`allocatable_requested`."""
    use_requested: bool = False
    """Score against Requested instead of NonZeroRequested for cpu and memory
    (BalancedAllocation does; Fit's strategies do not)."""

    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        """``calculatePodResourceRequestList``: the pod's request per configured
        resource (non-zero defaults unless ``use_requested``)."""
        source = pod.requests if self.use_requested else pod.nonzero_requests
        return tuple(source.get(r.name, 0) for r in self.resources)

    def score(self, nodes: Snapshot, rows: Rows, pod_requests: Sequence[int]) -> Int64Array:
        """One score per row in ``rows``. Raises StatusError without resources.
        Rows whose node and pods did not change since the last pod with the same
        requests keep their score (see framework.rowcache)."""
        if not self.resources:
            raise StatusError("resources not found")
        if self.scorer is None:
            raise StatusError(f"{self.name}: no per-resource scorer")
        requests = tuple(pod_requests)
        return SCORES.values(
            nodes, rows, (self, requests), lambda some: self._score_rows(nodes, some, requests)
        )

    def _score_rows(self, nodes: Snapshot, rows: Rows, pod_requests: Sequence[int]) -> Int64Array:
        scorer = self.scorer
        assert scorer is not None  # checked by score()
        total = np.zeros(len(rows), dtype=np.int64)
        weights: Int64Array | int = 0
        for spec, pod_request in zip(self.resources, pod_requests, strict=True):
            pair = self.allocatable_requested(nodes, rows, spec.name, pod_request)
            if pair is None:
                continue
            allocatable, requested = pair
            if allocatable.all():  # every node has the resource: no masking needed
                total += scorer(requested, allocatable) * spec.weight
                weights = weights + spec.weight
                continue
            present = allocatable != 0
            resource_score = scorer(requested, np.where(present, allocatable, 1))
            total += np.where(present, resource_score * spec.weight, 0)
            weights = weights + np.where(present, spec.weight, 0)
        if isinstance(weights, int):
            return go_div(total, weights) if weights else total
        return np.where(weights == 0, 0, go_div(total, np.maximum(weights, 1)))

    def allocatable_requested(
        self, nodes: Snapshot, rows: Rows, resource: str, pod_request: int
    ) -> tuple[Int64Array, Int64Array] | None:
        """``calculateResourceAllocatableRequest``; None stands for upstream's (0, 0)."""
        if pod_request == 0 and is_scalar_resource_name(resource):
            return None  # an extended resource the pod does not request is not scored
        used = nodes.requested
        if resource in (CPU, MEMORY):
            col = CPU_COL if resource == CPU else MEMORY_COL
            used = nodes.requested if self.use_requested else nodes.nonzero_requested
        elif resource == EPHEMERAL_STORAGE:
            col = EPHEMERAL_COL
        elif is_scalar_resource_name(resource) and resource in nodes.resources:
            col = nodes.resources[resource]
        else:
            return None
        if len(rows) == nodes.num_nodes:  # every node is scored: rows is 0..n-1
            return nodes.allocatable[:, col], used[:, col] + pod_request
        return nodes.allocatable[:, col][rows], used[:, col][rows] + pod_request
