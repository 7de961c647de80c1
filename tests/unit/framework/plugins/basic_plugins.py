"""Shared helpers for the node-level plugins' tests: a registry with them, upstream's
default multiPoint order, and one-call runners for a plugin's Filter and Score."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from contracts.k8s import (
    Node,
    Pod,
    Toleration,
)
from services.framework.api.interface import CycleState
from services.framework.api.registry import PluginEntry, Registry
from services.framework.api.status import Status
from services.framework.api.types import PodInfo
from services.framework.config import load_config
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins import (
    imagelocality,
    nodename,
    nodeports,
    nodeunschedulable,
    schedulinggates,
    tainttoleration,
)
from services.framework.plugins.nodeaffinity import node_affinity
from services.framework.plugins.noderesources import balanced_allocation
from services.framework.plugins.queuesort import qos_sort
from services.framework.runtime.framework import Framework
from tests.unit.framework.helpers import snapshot_of

ENTRIES: tuple[PluginEntry, ...] = (
    schedulinggates.ENTRY,
    nodeunschedulable.ENTRY,
    nodename.ENTRY,
    tainttoleration.ENTRY,
    node_affinity.ENTRY,
    nodeports.ENTRY,
    balanced_allocation.ENTRY,
    imagelocality.ENTRY,
    qos_sort.ENTRY,
)
UPSTREAM_MULTI_POINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)
"""Upstream's default multiPoint list (default_plugins.go), restricted to the plugins
these tests build, in the same order and with the same weights."""


def registry() -> Registry:
    return {**in_tree_registry(), **{entry.name: entry for entry in ENTRIES}}


def configuration(plugin_config: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    enabled = [{"name": n, "weight": w} if w else {"name": n} for n, w in UPSTREAM_MULTI_POINT]
    profile = {
        "plugins": {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}},
        "pluginConfig": list(plugin_config),
    }
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def framework(plugin_config: Sequence[Mapping[str, Any]] = (), seed: int = 0) -> Framework:
    reg = registry()
    profile = load_config(configuration(plugin_config), registry=reg).profiles[0]
    return Framework(profile, reg, rng=random.Random(seed))


def filter_statuses(
    plugin: Any, pod: Pod, nodes: Sequence[Node], bound: Iterable[Pod] = ()
) -> list[Status | None]:
    """Run the plugin's PreFilter (if any) and Filter; each node's status (None: passed).
    A PreFilter Skip passes every node; a PreFilter rejection is every node's status."""
    table = snapshot_of(nodes, bound).snapshot()
    state, info = CycleState(), PodInfo.of(pod)
    if hasattr(plugin, "pre_filter"):
        _, status = plugin.pre_filter(state, info, table)
        if status.is_skip():
            return [None] * len(nodes)
        if not status.is_success():
            return [status] * len(nodes)
    result = plugin.filter_all(state, info, table)
    return [
        None if result.passed[i] else result.describe(int(result.codes[i]))
        for i in range(table.num_nodes)
    ]


def scores(
    plugin: Any,
    pod: Pod,
    nodes: Sequence[Node],
    bound: Iterable[Pod] = (),
    *,
    pre_score: bool = True,
    normalize: bool = True,
) -> list[int] | Status:
    """The plugin's (normalized) scores of every node, or the PreScore status when it
    is not Success (Skip, Error)."""
    table = snapshot_of(nodes, bound).snapshot()
    state, info = CycleState(), PodInfo.of(pod)
    rows = np.arange(table.num_nodes, dtype=np.intp)
    if pre_score and hasattr(plugin, "pre_score"):
        status = plugin.pre_score(state, info, table, rows)
        if not status.is_success():
            return status  # type: ignore[no-any-return]
    raw = plugin.score_all(state, info, table, rows)
    if normalize and hasattr(plugin, "normalize_score"):
        raw = plugin.normalize_score(state, info, raw)
    return [int(s) for s in raw]


def tol(key: str = "", operator: str = "", value: str = "", effect: str = "") -> Toleration:
    return Toleration(
        key=key or None, operator=operator or None, value=value or None, effect=effect or None
    )
