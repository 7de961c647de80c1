"""``ksched compare CLUSTER --config A.yaml --config B.yaml``: the same pending pods on
the same cluster, scheduled once under each KubeSchedulerConfiguration with the same
``--seed``, and what came out of each, side by side.

Each run is ``simulate``'s (cli.simulate: the embedded pipeline, every pending pod queued
before the first attempt), with every decision explained. What a run reports is read
from the cluster as the run leaves it (the in-memory store):

- ``bound`` / ``pending`` / ``evicted``: the file's pending pods bound at the end, those
  left without a node, and the file's pods (bound or pending) preemption deleted;
- per node, for cpu and memory: the requests of the pods bound there over the node's
  allocatable (``pod_requests`` / ``node_allocatable`` of services.common.resources:
  cpu in millicores, memory in bytes), and over the nodes that have some allocatable of the
  resource, the mean, the population standard deviation and the imbalance (max - min);
- ``largestFree``: per resource, the largest free amount (allocatable - requested, at
  least 0) on any one node and that node (the first in file order among equals): the
  largest request of that resource alone that would still fit somewhere;
- ``failedScheduling``: for the pods left pending, their last FailedScheduling's filter
  verdicts (``--explain``'s) grouped by the plugin that rejected each node: how many
  pods it rejected (on at least one node), on how many (pod, node) pairs, and how often
  each reason was given. A pod PreEnqueue holds back counts under its PreEnqueue plugin
  with its message as the reason and no node; a FailedScheduling without node verdicts
  counts under ``-`` with its message;
- ``wallSeconds``: the run's wall time (``time.perf_counter``, start to stop of the
  embedded pipeline).

``placedDifferently``: every pod of the file whose node at the end differs between A and
B, in file order, its node under each (``null``, ``-`` in the table, when it has none:
pending, or deleted by preemption).

JSON (``-o json``, one line; the report module renders the table and the HTML)::

    {"seed": 0,
     "a": RUN, "b": RUN,
     "placedDifferently": [{"pod": "demo/batch-1", "a": "small", "b": "medium"}]}

    RUN = {"config": "ops/examples/scheduler-config.yaml", "wallSeconds": 0.08,
           "bound": 4, "pending": 1, "evicted": 0,
           "nodes": [{"name": "small",
                      "cpu": {"requested": 1000, "allocatable": 2000, "utilization": 0.5},
                      "memory": {…}}, …],
           "utilization": {"cpu": {"mean": 0.7, "stddev": 0.2, "imbalance": 0.5},
                           "memory": {…}},
           "largestFree": {"cpu": {"node": "small", "amount": 1000}, "memory": {…}},
           "failedScheduling": {"NodeResourcesFit": {"pods": 1, "nodes": 4,
                                "reasons": {"Insufficient cpu": 4, "Too many pods": 1}}}}

Utilization figures are fractions (0.5 is 50 %), rounded to 4 decimals in JSON.

Refused with one line and exit code 2: not exactly two ``--config``; the same file
given twice (two files with the same content are fine: that compares a profile with
itself and shows no difference); a file that cannot be read or is not a valid
configuration; a bad cluster file.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from contracts.k8s import Node, Pod
from services.cli.commands import read_input
from services.cli.embedded import NOT_READY, DecisionRecord, EmbeddedCluster
from services.cli.errors import InputError
from services.cli.manifests import Document, check
from services.cli.simulate import last_decisions, load_clusters
from services.common.clock import FakeClock
from services.common.resources import CPU, MEMORY, node_allocatable, pod_requests
from services.framework.config import Profile

RESOURCES = (CPU, MEMORY)
"""The resources compared, in report order."""
NO_PLUGIN = "-"
"""The plugin a FailedScheduling without node verdicts is counted under."""
_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """One node after a run: what its bound pods request and what it has."""

    name: str
    requested: Mapping[str, int]
    allocatable: Mapping[str, int]

    def utilization(self, resource: str) -> float:
        """Requested over allocatable (0 when the node has none of ``resource``)."""
        total = self.allocatable.get(resource, 0)
        return self.requested.get(resource, 0) / total if total else 0.0

    def free(self, resource: str) -> int:
        """Allocatable - requested, at least 0."""
        return max(self.allocatable.get(resource, 0) - self.requested.get(resource, 0), 0)


@dataclass(frozen=True, slots=True)
class Spread:
    """Utilization over the nodes: mean, population standard deviation, max - min."""

    mean: float
    stddev: float
    imbalance: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(0.0, 0.0, 0.0)
        mean = sum(values) / len(values)
        variance = sum((v - mean) ** 2 for v in values) / len(values)
        return cls(mean, math.sqrt(variance), max(values) - min(values))


@dataclass(slots=True)
class Rejections:
    """What one plugin rejected among the pods left pending."""

    pods: int = 0
    nodes: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunResult:
    """One configuration's run."""

    config: str
    wall_seconds: float
    pods: tuple[str, ...]
    """The file's pods, ``namespace/name``, file order."""
    placements: Mapping[str, str | None]
    """Each pod of the file → its node at the end (None: pending). A pod the run
    deleted (a preemption victim) is left out."""
    pending_pods: tuple[str, ...]
    """The file's pods that had no node before the run."""
    nodes: tuple[NodeLoad, ...]
    """File order."""
    rejections: Mapping[str, Rejections]
    """Plugin → what it rejected among the pods left pending (sorted by plugin)."""

    @property
    def bound(self) -> int:
        return sum(1 for p in self.pending_pods if self.placements.get(p) is not None)

    @property
    def pending(self) -> int:
        return sum(1 for p in self.pending_pods if p in self.placements and not self.placements[p])

    @property
    def evicted(self) -> int:
        return sum(1 for p in self.pods if p not in self.placements)

    def spread(self, resource: str) -> Spread:
        """Over the nodes with some allocatable ``resource``."""
        having = [n.utilization(resource) for n in self.nodes if n.allocatable.get(resource)]
        return Spread.of(having)

    def largest_free(self, resource: str) -> tuple[str | None, int]:
        """The node with the most of ``resource`` free (first among equals), and how much."""
        best: tuple[str | None, int] = (None, 0)
        for node in self.nodes:
            if best[0] is None or node.free(resource) > best[1]:
                best = (node.name, node.free(resource))
        return best

    def to_json(self) -> dict[str, Any]:
        def load(node: NodeLoad, resource: str) -> dict[str, Any]:
            return {
                "requested": node.requested.get(resource, 0),
                "allocatable": node.allocatable.get(resource, 0),
                "utilization": round(node.utilization(resource), 4),
            }

        spreads = {r: self.spread(r) for r in RESOURCES}
        free = {r: self.largest_free(r) for r in RESOURCES}
        return {
            "config": self.config,
            "wallSeconds": round(self.wall_seconds, 4),
            "bound": self.bound,
            "pending": self.pending,
            "evicted": self.evicted,
            "nodes": [{"name": n.name, **{r: load(n, r) for r in RESOURCES}} for n in self.nodes],
            "utilization": {
                r: {
                    "mean": round(s.mean, 4),
                    "stddev": round(s.stddev, 4),
                    "imbalance": round(s.imbalance, 4),
                }
                for r, s in spreads.items()
            },
            "largestFree": {
                r: {"node": node, "amount": amount} for r, (node, amount) in free.items()
            },
            "failedScheduling": {
                plugin: {"pods": r.pods, "nodes": r.nodes, "reasons": dict(r.reasons)}
                for plugin, r in self.rejections.items()
            },
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two runs of the same cluster and seed."""

    seed: int | None
    a: RunResult
    b: RunResult

    @property
    def placed_differently(self) -> list[tuple[str, str | None, str | None]]:
        """(pod, A's node, B's node) for each pod whose node differs, file order; None
        for a pod without one (pending, or deleted by preemption)."""
        pods = list(self.a.pods) + [p for p in self.b.pods if p not in self.a.pods]
        return [
            (pod, self.a.placements.get(pod), self.b.placements.get(pod))
            for pod in pods
            if self.a.placements.get(pod) != self.b.placements.get(pod)
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "placedDifferently": [
                {"pod": pod, "a": a, "b": b} for pod, a, b in self.placed_differently
            ],
        }


async def run_once(
    documents: Sequence[Document], profiles: Sequence[Profile], *, seed: int | None, config: str
) -> RunResult:
    """Schedule ``documents`` under ``profiles`` and read what the cluster became."""
    started = time.perf_counter()
    cluster = EmbeddedCluster(clock=FakeClock(), seed=seed, profiles=profiles, explain=True)
    await cluster.start()
    try:
        await cluster.publish_and_schedule(documents)
        cluster.report_held_back()
        stored = await cluster.store.objects("pod")
    finally:
        await cluster.stop()
    wall = time.perf_counter() - started
    file_pods = [_pod(d) for d in documents if d.kind == "pod"]
    keys = [_key(p) for p in file_pods]
    final = {key: msgspec.json.decode(stored[key], type=Pod) for key in keys if key in stored}
    placements = {key: final[key].spec.node_name or None for key in keys if key in final}
    pending = tuple(_key(p) for p in file_pods if not p.spec.node_name)
    left = {p for p in pending if p in placements and placements[p] is None}
    records = [r for r in last_decisions(cluster.decisions) if r.pod in left]
    return RunResult(
        config=config,
        wall_seconds=wall,
        pods=tuple(keys),
        placements=placements,
        pending_pods=pending,
        nodes=_loads(documents, final.values()),
        rejections=_rejections(records),
    )


def _loads(documents: Sequence[Document], pods: Iterable[Pod]) -> tuple[NodeLoad, ...]:
    requested: dict[str, dict[str, int]] = {}
    for pod in pods:
        if pod.spec.node_name and pod.status.phase not in _TERMINAL:
            into = requested.setdefault(pod.spec.node_name, {})
            for resource, amount in pod_requests(pod).items():
                into[resource] = into.get(resource, 0) + amount
    nodes = [check(d, warn=_unwarned).object for d in documents if d.kind == "node"]
    return tuple(
        NodeLoad(n.metadata.name, requested.get(n.metadata.name, {}), node_allocatable(n))
        for n in nodes
        if isinstance(n, Node)
    )


def _rejections(records: Sequence[DecisionRecord]) -> dict[str, Rejections]:
    """Plugin → what it rejected, from each pending pod's last decision."""
    found: dict[str, Rejections] = {}

    def count(plugin: str, reasons: Sequence[str], nodes: int) -> Rejections:
        entry = found.setdefault(plugin, Rejections())
        entry.nodes += nodes
        for reason in reasons:
            entry.reasons[reason] = entry.reasons.get(reason, 0) + 1
        return entry

    for record in records:
        if record.kind == NOT_READY:
            count(record.plugin or NO_PLUGIN, [record.message or ""], 0).pods += 1
            continue
        verdicts = (record.explain or {}).get("filter", {})
        rejecting = [v for v in verdicts.values() if isinstance(v, Mapping)]
        if not rejecting:
            count(NO_PLUGIN, [record.message or ""], 0).pods += 1
            continue
        plugins: set[str] = set()
        for verdict in rejecting:
            plugin = str(verdict["plugin"])
            plugins.add(plugin)
            count(plugin, list(verdict["reasons"]) or [str(verdict["status"])], 1)
        for plugin in plugins:
            found[plugin].pods += 1
    return {plugin: found[plugin] for plugin in sorted(found)}


def _pod(document: Document) -> Pod:
    pod = check(document, warn=_unwarned).object
    assert isinstance(pod, Pod)
    return pod


def _unwarned(line: str) -> None:
    """load_cluster has warned of the file's unknown fields already."""


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


def check_configs(configs: Sequence[str]) -> tuple[str, str]:
    """The two ``--config`` paths, or InputError: not two, or the same file twice."""
    if len(configs) != 2:
        raise InputError(
            f"--config: give exactly two configurations (A, then B); got {len(configs)}"
        )
    a, b = configs
    if Path(a).resolve() == Path(b).resolve():
        raise InputError(f"--config: the same file given twice ({a}); compare two configurations")
    return a, b


async def compare(
    documents: Sequence[Document],
    configs: Sequence[tuple[str, Sequence[Profile]]],
    *,
    seed: int | None = 0,
) -> Comparison:
    """Run ``documents`` under each of the two (name, profiles), one after the other."""
    (name_a, a), (name_b, b) = configs
    run_a = await run_once(documents, a, seed=seed, config=name_a)
    run_b = await run_once(documents, b, seed=seed, config=name_b)
    return Comparison(seed, run_a, run_b)


def compare_command(args: argparse.Namespace) -> int:
    from services.cli.compare_report import print_comparison, write_html
    from services.cli.runtime import load_profiles

    paths = check_configs(args.config)
    documents = load_clusters([read_input(path) for path in [args.cluster, *(args.add or ())]])
    configs = [(path, load_profiles(path)) for path in paths]
    comparison = asyncio.run(compare(documents, configs, seed=args.seed))
    print_comparison(comparison, args.output, sys.stdout)
    if args.html:
        write_html(comparison, Path(args.html))
    return 0


__all__ = [
    "Comparison",
    "NodeLoad",
    "Rejections",
    "RunResult",
    "Spread",
    "check_configs",
    "compare",
    "compare_command",
    "run_once",
]
