"""Small test plugins and a helper to build a Framework with them next to the in-tree ones."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from services.framework.api.interface import (
    CycleState,
    FilterPlugin,
    FilterResult,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    Rows,
    ScorePlugin,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.snapshot import PODS_COL, Snapshot
from services.framework.config import PluginRef, Plugins, PluginSet, Profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.framework.runtime.profile import merge_plugins

TAINTED = Status(Code.UnschedulableAndUnresolvable, ("node(s) had untolerated taint",))


@dataclass
class RejectNodes(FilterPlugin):
    """Filter: rejects the named nodes with ``status``."""

    nodes: set[str]
    status: Status = TAINTED
    name: str = "RejectNodes"

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        passed = np.array([n not in self.nodes for n in nodes.names], dtype=np.bool_)
        return FilterResult.uniform(passed, self.status)


@dataclass
class NeedsCompany(FilterPlugin):
    """Filter: passes only nodes that already run a pod (as pod affinity might)."""

    name: str = "NeedsCompany"

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        status = Status(Code.Unschedulable, ("node(s) didn't match pod affinity rules",))
        return FilterResult.uniform(nodes.requested[:, PODS_COL] > 0, status)


@dataclass
class FixedPreFilter(PreFilterPlugin, PreFilterExtensions):
    """PreFilter answering ``(result, status)``; records nominated pods added."""

    result: PreFilterResult | None = None
    status: Status = SUCCESS
    name: str = "FixedPreFilter"
    added: list[tuple[str, str]] = field(default_factory=list)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        return self.result, self.status

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: str) -> Status:
        self.added.append((to_add.key, node))
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: str) -> Status:
        return SUCCESS


@dataclass
class FixedScore(ScorePlugin):
    """Score: ``scores[node name]`` (0 if absent)."""

    scores: Mapping[str, int]
    name: str = "FixedScore"

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        return np.array([self.scores.get(nodes.names[r], 0) for r in rows], dtype=np.int64)


FIT_ONLY = Plugins(
    multi_point=PluginSet(
        (PluginRef("PrioritySort"), PluginRef("NodeResourcesFit", 1), PluginRef("DefaultBinder"))
    )
)


def framework_with(
    *plugins: object,
    filter: Sequence[str] = (),
    pre_filter: Sequence[str] = (),
    score: Sequence[tuple[str, int]] = (),
    seed: int | None = 0,
    fit_score: bool = True,
) -> Framework:
    """A minimal profile (PrioritySort, NodeResourcesFit, DefaultBinder — what these
    framework tests reason about) plus the given test plugins at the given points."""
    registry = dict(in_tree_registry())
    for plugin in plugins:
        name = plugin.name  # type: ignore[attr-defined]
        registry[name] = PluginEntry(name, type(plugin), lambda _args, _h, p=plugin: p)
    custom = Plugins(
        pre_filter=PluginSet(tuple(PluginRef(n) for n in pre_filter)),
        filter=PluginSet(tuple(PluginRef(n) for n in filter)),
        score=PluginSet(
            tuple(PluginRef(n, w) for n, w in score),
            () if fit_score else (PluginRef("NodeResourcesFit"),),
        ),
    )
    profile = Profile(plugins=merge_plugins(FIT_ONLY, custom))
    return Framework(profile, registry, rng=random.Random(seed))
