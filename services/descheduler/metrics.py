"""The descheduler's Prometheus metrics, with kubernetes-sigs/descheduler's names,
labels and buckets (``metrics/metrics.go``):

- ``descheduler_pods_evicted_total{result,strategy,profile,namespace,node}``: evictions
  by result, one of upstream's fixed values (``success``, a limit's message, ``error``
  otherwise: ``evictions.RESULTS``); an eviction still outstanding is counted once.
  Upstream also keeps the deprecated counter ``descheduler_pods_evicted`` with the same
  series; it is served with that name and the same samples, typed ``untyped`` (a
  Python counter family always ends in ``_total`` and its TYPE line would clash).
- ``descheduler_loop_duration_seconds`` and the deprecated
  ``descheduler_descheduler_loop_duration_seconds``: one cycle.
- ``descheduler_strategy_duration_seconds{strategy,profile}`` and the deprecated
  ``descheduler_descheduler_strategy_duration_seconds``: one plugin's run.
- ``descheduler_build_info``: 1, with the version.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

LOOP_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500)
STRATEGY_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100)
EVICTED_LABELS: Final = ("result", "strategy", "profile", "namespace", "node")
HELP_EVICTED: Final = (
    "Number of total evicted pods, by the result, by the strategy, by the namespace, by the "
    "node name. 'error' result means a pod could not be evicted"
)


class _DeprecatedTwin(Collector):
    """``descheduler_pods_evicted``: the samples of ``descheduler_pods_evicted_total``
    under the deprecated name."""

    def __init__(self, counter: Counter) -> None:
        self._counter = counter

    def describe(self) -> list[Metric]:
        return []  # its name is the counter's own base name: nothing new to register

    def collect(self) -> Iterator[Metric]:
        twin = Metric(
            "descheduler_pods_evicted", "(Deprecated since 0.34.0) " + HELP_EVICTED, "unknown"
        )
        for family in self._counter.collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    twin.add_sample("descheduler_pods_evicted", sample.labels, sample.value)
        yield twin


class DeschedulerMetrics:
    def __init__(self, version: str = "") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.pods_evicted = Counter(
            "descheduler_pods_evicted", HELP_EVICTED, EVICTED_LABELS, registry=self.registry
        )
        self.registry.register(_DeprecatedTwin(self.pods_evicted))
        self.loop = [
            Histogram(
                name,
                "Time taken to complete a full descheduling cycle",
                buckets=LOOP_BUCKETS,
                registry=self.registry,
            )
            for name in (
                "descheduler_loop_duration_seconds",
                "descheduler_descheduler_loop_duration_seconds",
            )
        ]
        self.strategy = [
            Histogram(
                name,
                "Time taken to complete Each strategy of the descheduling operation",
                ("strategy", "profile"),
                buckets=STRATEGY_BUCKETS,
                registry=self.registry,
            )
            for name in (
                "descheduler_strategy_duration_seconds",
                "descheduler_descheduler_strategy_duration_seconds",
            )
        ]
        build = Gauge(
            "descheduler_build_info",
            "Build info about descheduler",
            ("AppVersion", "DeschedulerVersion"),
            registry=self.registry,
        )
        build.labels(version, f"ksched-{version}").set(1)

    def evicted(self, result: str, strategy: str, profile: str, namespace: str, node: str) -> None:
        self.pods_evicted.labels(result, strategy, profile, namespace, node).inc()

    def cycle(self, seconds: float) -> None:
        for histogram in self.loop:
            histogram.observe(seconds)

    def ran(self, strategy: str, profile: str, seconds: float) -> None:
        for histogram in self.strategy:
            histogram.labels(strategy, profile).observe(seconds)


__all__ = ["DeschedulerMetrics"]
