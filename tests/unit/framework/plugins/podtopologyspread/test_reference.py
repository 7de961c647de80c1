"""The columnar plugin against a literal, node-by-node transcription of upstream's
algorithm (calPreFilterState/Filter, initPreScoreState/PreScore/Score/NormalizeScore),
on random clusters: same verdicts, same scores."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import numpy as np
import pytest

from contracts.k8s import LabelSelector, Node, Pod
from services.framework.api.interface import CycleState
from services.framework.api.types import PodInfo
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.podtopologyspread.helpers import (
    HOSTNAME,
    UNSCHEDULABLE_TAINT,
    exists,
    labels,
    node_selector,
    plugin,
    spread,
    table,
    toleration,
)

KEYS = ("zone", "node", HOSTNAME)


def selects(selector: LabelSelector | None, pod_labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if pod_labels.get(key) != value:
            return False
    return all(expr.key in pod_labels for expr in selector.match_expressions)  # Exists only


def effective(c, incoming: Pod) -> tuple[LabelSelector | None, bool]:
    """The constraint's selector with matchLabelKeys merged, and whether it is empty."""
    selector = c.label_selector
    keyed = {
        k: incoming.metadata.labels[k] for k in c.match_label_keys if k in incoming.metadata.labels
    }
    if selector is not None and keyed:
        selector = LabelSelector(
            match_labels={**selector.match_labels, **keyed},
            match_expressions=selector.match_expressions,
        )
    empty = selector is not None and not selector.match_labels and not selector.match_expressions
    return selector, empty


def count(pods: list[Pod], selector: LabelSelector | None, empty: bool, namespace: str) -> int:
    if empty:
        return 0
    return sum(
        1
        for p in pods
        if p.metadata.deletion_timestamp is None
        and p.metadata.namespace == namespace
        and selects(selector, p.metadata.labels)
    )


def included(c, incoming: Pod, n: Node) -> bool:
    if (c.node_affinity_policy or "Honor") == "Honor":
        if any(n.metadata.labels.get(k) != v for k, v in incoming.spec.node_selector.items()):
            return False
    if c.node_taints_policy == "Honor":
        tolerated = {t.key for t in incoming.spec.tolerations}
        if any(t.key not in tolerated for t in n.spec.taints):
            return False
    return True


def reference_filter(incoming: Pod, nodes: list[Node], on: dict[str, list[Pod]]) -> list[str]:
    hard = [
        c
        for c in incoming.spec.topology_spread_constraints
        if c.when_unsatisfiable == "DoNotSchedule"
    ]
    ns = incoming.metadata.namespace
    counts: list[dict[str, int]] = [{} for _ in hard]
    for n in nodes:
        if not all(c.topology_key in n.metadata.labels for c in hard):
            continue
        for i, c in enumerate(hard):
            if included(c, incoming, n):
                selector, empty = effective(c, incoming)
                value = n.metadata.labels[c.topology_key]
                counts[i][value] = counts[i].get(value, 0) + count(
                    on[n.metadata.name], selector, empty, ns
                )
    verdicts = []
    for n in nodes:
        verdict = "ok"
        for i, c in enumerate(hard):
            value = n.metadata.labels.get(c.topology_key)
            if value is None:
                verdict = "missing"
                break
            least = min(counts[i].values(), default=2**31 - 1)
            if len(counts[i]) < (c.min_domains or 1):
                least = 0
            selector, _ = effective(c, incoming)
            own = (
                1
                if selects(selector, incoming.metadata.labels)
                or (
                    selector is not None
                    and not selector.match_labels
                    and not selector.match_expressions
                )
                else 0
            )
            if counts[i].get(value, 0) + own - least > c.max_skew:
                verdict = "skew"
                break
        verdicts.append(verdict)
    return verdicts


def go_round(x: float) -> int:
    """Scores are never negative: halves round up."""
    return math.floor(x + 0.5)


def reference_scores(
    incoming: Pod, nodes: list[Node], scored: list[Node], on: dict[str, list[Pod]]
) -> list[int]:
    soft = [
        c
        for c in incoming.spec.topology_spread_constraints
        if c.when_unsatisfiable == "ScheduleAnyway"
    ]
    ns = incoming.metadata.namespace
    ignored = {
        n.metadata.name
        for n in scored
        if not all(c.topology_key in n.metadata.labels for c in soft)
    }
    domains: list[dict[str, int]] = [{} for _ in soft]
    sizes = [0] * len(soft)
    for n in scored:
        if n.metadata.name in ignored:
            continue
        for i, c in enumerate(soft):
            if c.topology_key != HOSTNAME and n.metadata.labels[c.topology_key] not in domains[i]:
                domains[i][n.metadata.labels[c.topology_key]] = 0
                sizes[i] += 1
    weights = [
        math.log((len(scored) - len(ignored) if c.topology_key == HOSTNAME else sizes[i]) + 2)
        for i, c in enumerate(soft)
    ]
    for n in nodes:
        if not all(c.topology_key in n.metadata.labels for c in soft):
            continue
        for i, c in enumerate(soft):
            value = n.metadata.labels[c.topology_key]
            if included(c, incoming, n) and value in domains[i]:
                selector, empty = effective(c, incoming)
                domains[i][value] += count(on[n.metadata.name], selector, empty, ns)
    raw = []
    for n in scored:
        if n.metadata.name in ignored:
            raw.append(0)
            continue
        total = 0.0
        for i, c in enumerate(soft):
            value = n.metadata.labels[c.topology_key]
            if c.topology_key == HOSTNAME:
                selector, empty = effective(c, incoming)
                matched = count(on[n.metadata.name], selector, empty, ns)
            else:
                matched = domains[i][value]
            total += float(matched) * weights[i] + float(c.max_skew - 1)
        raw.append(go_round(total))
    valid = [s for n, s in zip(scored, raw, strict=True) if n.metadata.name not in ignored]
    lowest, highest = min(valid, default=0), max([*valid, 0])
    result = []
    for n, s in zip(scored, raw, strict=True):
        if n.metadata.name in ignored:
            result.append(0)
        elif highest == 0:
            result.append(100)
        else:
            result.append(100 * (highest + lowest - s) // highest)
    return result


def random_cluster(rng: random.Random) -> tuple[Pod, list[Node], list[Pod]]:
    nodes = []
    for i in range(rng.randrange(4, 12)):
        node_labels = {"node": f"n{i}"} if rng.random() < 0.9 else {}
        if rng.random() < 0.9:
            node_labels[HOSTNAME] = f"n{i}"
        if rng.random() < 0.85:
            node_labels["zone"] = rng.choice(["z1", "z2", "z3", "z4"])
        if rng.random() < 0.5:
            node_labels["disk"] = "ssd"
        taints = [UNSCHEDULABLE_TAINT] if rng.random() < 0.2 else []
        nodes.append(make_node(f"n{i}", labels=node_labels, taints=taints))
    existing = []
    for j in range(rng.randrange(0, 30)):
        pod_labels = {
            k: v
            for k, v in (("app", rng.choice("ab")), ("tier", rng.choice("xy")))
            if rng.random() < 0.7
        }
        existing.append(
            make_pod(
                f"e{j}",
                node_name=rng.choice(nodes).metadata.name,
                namespace=rng.choice(["default", "default", "other"]),
                terminating=rng.random() < 0.1,
                labels=pod_labels,
            )
        )
    incoming = make_pod("p", labels={"app": rng.choice("ab"), "tier": rng.choice("xy")})
    for _ in range(rng.randrange(1, 4)):
        selector = rng.choice([labels(app="a"), labels(app="b"), exists("tier"), labels(), None])
        incoming = spread(
            incoming,
            rng.randrange(1, 4),
            rng.choice(KEYS),
            rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            selector,
            min_domains=rng.choice([None, 1, 2, 5]),
            affinity_policy=rng.choice([None, "Honor", "Ignore"]),
            taints_policy=rng.choice([None, "Honor", "Ignore"]),
            match_label_keys=rng.choice([(), ("tier",)]),
        )
    if rng.random() < 0.3:
        incoming = node_selector(incoming, disk="ssd")
    if rng.random() < 0.3:
        incoming = toleration(incoming, UNSCHEDULABLE_TAINT.key)
    return incoming, nodes, existing


@pytest.mark.parametrize("seed", range(300))
def test_matches_the_reference(seed):
    rng = random.Random(seed)
    incoming, nodes, existing = random_cluster(rng)
    on: dict[str, list[Pod]] = {n.metadata.name: [] for n in nodes}
    for p in existing:
        on[p.spec.node_name].append(p)
    nodes_table = table(nodes, existing)
    assert list(nodes_table.names) == [n.metadata.name for n in nodes]
    pl, info = plugin(), PodInfo.of(incoming)

    state = CycleState()
    _, status = pl.pre_filter(state, info, nodes_table)
    expected = reference_filter(incoming, nodes, on)
    if status.is_skip():
        assert set(expected) == {"ok"}
    else:
        result = pl.filter_all(state, info, nodes_table)
        names = {0: "ok", 1: "skew", 2: "missing"}
        assert [names[int(c)] for c in result.codes] == expected

    scored_rows = np.asarray(
        sorted(rng.sample(range(len(nodes)), rng.randrange(1, len(nodes) + 1)))
    )
    scored = [nodes[r] for r in scored_rows]
    state = CycleState()
    status = pl.pre_score(state, info, nodes_table, scored_rows)
    expected_scores = reference_scores(incoming, nodes, scored, on)
    if status.is_skip():
        assert not any(
            c.when_unsatisfiable == "ScheduleAnyway"
            for c in incoming.spec.topology_spread_constraints
        )
        return
    raw = pl.score_all(state, info, nodes_table, scored_rows)
    assert pl.normalize_score(state, info, raw).tolist() == expected_scores
