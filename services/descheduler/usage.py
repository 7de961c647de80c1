"""Node usage from ``metrics.k8s.io`` NodeMetrics, smoothed as upstream's metrics
collector does: the first sample is taken as is, each later one moves the value a
tenth of the way (``0.9 * previous + 0.1 * sample``, rounded half away from zero).
The service collects every 5 s, as upstream polls metrics-server; the what-if CLI
collects once, so it sees the samples unchanged."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from contracts.k8s import NodeMetrics
from services.common.resources import ResourceError, resource_amounts

BETA = 0.9
COLLECT_INTERVAL = 5.0
"""Seconds between two collections (upstream's ``wait.NonSlidingUntil`` period)."""

COLLECTED = ("cpu", "memory")
"""Upstream's collector keeps only these two; any other resource is missing."""


def weighted_average(previous: int, sample: int) -> int:
    value = BETA * previous + (1 - BETA) * sample
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


class NodeUsageCollector:
    """Each node's smoothed usage (cpu in millicores, memory in bytes)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, int]] = {}
        self.synced = False

    def collect(self, metrics: Iterable[NodeMetrics]) -> list[str]:
        """Folds one round of samples in; returns a one-line error per sample that
        could not be read (that node keeps its previous value, as upstream)."""
        errors = []
        for sample in metrics:
            name = sample.metadata.name
            try:
                amounts = resource_amounts(sample.usage, "usage")
            except ResourceError as error:
                errors.append(f"NodeMetrics {name}: {error}")
                continue
            values = {r: amounts.get(r, 0) for r in COLLECTED}
            previous = self.nodes.get(name)
            if previous is None:
                self.nodes[name] = values
            else:
                for r in COLLECTED:
                    previous[r] = weighted_average(previous[r], values[r])
        self.synced = True
        return errors

    def usage(self) -> Mapping[str, Mapping[str, int]]:
        return {name: dict(values) for name, values in self.nodes.items()}
