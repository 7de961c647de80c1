"""Builders and runners for InterPodAffinity tests, in the spirit of upstream's
``st.MakePod().PodAffinityIn(...)`` and ``SetupPluginWithInformers``."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

import msgspec
import numpy as np

from contracts.k8s import (
    Affinity,
    LabelSelector,
    LabelSelectorRequirement,
    Namespace,
    Node,
    ObjectMeta,
    Pod,
    PodAffinityTerm,
)
from services.framework.api.interface import CycleState
from services.framework.api.status import Status
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from tests.builders.selectors import does_not_exist as does_not_exist
from tests.builders.selectors import exists as exists
from tests.builders.selectors import in_ as in_
from tests.builders.selectors import not_in as not_in

_names = itertools.count()

NS_LABEL_T1 = {"team": "team1"}
NS_LABEL_T2 = {"team": "team2"}
NAMESPACES = (
    Namespace(metadata=ObjectMeta(name="subteam1.team1", labels=NS_LABEL_T1)),
    Namespace(metadata=ObjectMeta(name="subteam2.team1", labels=NS_LABEL_T1)),
    Namespace(metadata=ObjectMeta(name="subteam1.team2", labels=NS_LABEL_T2)),
    Namespace(metadata=ObjectMeta(name="subteam2.team2", labels=NS_LABEL_T2)),
)
"""The namespaces upstream's scoring_test.go sets up."""


def term(
    topology_key: str,
    *expressions: LabelSelectorRequirement,
    match_labels: Mapping[str, str] | None = None,
    selector: LabelSelector | None = None,
    namespaces: Sequence[str] = (),
    namespace_selector: LabelSelector | None = None,
    match_label_keys: Sequence[str] = (),
    mismatch_label_keys: Sequence[str] = (),
) -> PodAffinityTerm:
    """A PodAffinityTerm; the label selector is ``selector`` or built from
    ``expressions`` / ``match_labels``."""
    if selector is None:
        selector = LabelSelector(
            match_labels=dict(match_labels or {}), match_expressions=list(expressions)
        )
    return PodAffinityTerm(
        label_selector=selector,
        namespaces=list(namespaces),
        topology_key=topology_key,
        namespace_selector=namespace_selector,
        match_label_keys=list(match_label_keys),
        mismatch_label_keys=list(mismatch_label_keys),
    )


def fresh() -> str:
    """A pod name no other pod of these tests has: p0, p1, …"""
    return f"p{next(_names)}"


def with_affinity(target: Pod, affinity: Affinity) -> Pod:
    return msgspec.structs.replace(
        target, spec=msgspec.structs.replace(target.spec, affinity=affinity)
    )


def snapshot(
    nodes: Iterable[Node], pods: Iterable[Pod] = (), namespaces: Iterable[Namespace] = NAMESPACES
) -> Cache:
    snap = Cache()
    for n in nodes:
        snap.add_node(n)
    for p in pods:
        snap.add_pod(p)
    for ns in namespaces:
        snap.listers.put(ns)
    return snap


def plugin(snap: Cache, args: InterPodAffinityArgs | None = None) -> InterPodAffinity:
    return InterPodAffinity((args or InterPodAffinityArgs()).defaulted(), snap.listers)


def run_filter(
    incoming: Pod,
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    namespaces: Iterable[Namespace] = NAMESPACES,
) -> tuple[Status, list[Status | None]]:
    """PreFilter, then Filter on every node (in ``nodes`` order; None = passes).
    The per-node list is empty when PreFilter did not succeed."""
    snap = snapshot(nodes, pods, namespaces)
    table = snap.snapshot()
    plug, state, info = plugin(snap), CycleState(), PodInfo.of(incoming)
    _, status = plug.pre_filter(state, info, table)
    if not status.is_success():
        return status, []
    result = plug.filter_all(state, info, table)
    verdicts: list[Status | None] = []
    for n in nodes:
        row = table.index[n.metadata.name]
        verdicts.append(None if result.passed[row] else result.describe(int(result.codes[row])))
    return status, verdicts


def run_score(
    incoming: Pod,
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    args: InterPodAffinityArgs | None = None,
) -> tuple[Status, list[int]]:
    """PreScore, then Score and NormalizeScore over every node (in ``nodes`` order)."""
    snap = snapshot(nodes, pods)
    table = snap.snapshot()
    plug, state, info = plugin(snap, args), CycleState(), PodInfo.of(incoming)
    rows = [table.index[n.metadata.name] for n in nodes]
    picked = np.asarray(rows, dtype=np.intp)
    status = plug.pre_score(state, info, table, picked)
    if not status.is_success():
        return status, []
    raw = plug.score_all(state, info, table, picked)
    return status, plug.normalize_score(state, info, raw).tolist()
