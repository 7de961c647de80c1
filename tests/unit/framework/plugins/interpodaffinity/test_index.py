"""The pod index follows the snapshot between cycles: after any change (pods bound,
assumed, relabelled, moved or deleted; nodes added, removed or relabelled) a long-lived
plugin computes exactly what a fresh one computes."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from contracts.k8s import Pod
from services.framework.api.interface import CycleState
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.plugins.interpodaffinity import InterPodAffinity
from services.framework.plugins.interpodaffinity.filtering import PreFilterState
from services.framework.plugins.interpodaffinity.plugin import (
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
)
from services.framework.plugins.interpodaffinity.scoring import PreScoreState
from tests.builders import make_node, make_pod
from tests.builders.selectors import pod_affinity
from tests.unit.framework.plugins.interpodaffinity.support import (
    exists,
    fresh,
    in_,
    plugin,
    snapshot,
    term,
)

APPS = ("web", "db", "cache")
KEYS = ("zone", "host", "rack")


def random_pod(rng: random.Random, name: str, node_name: str | None) -> Pod:
    labels = {"app": rng.choice(APPS)}
    if rng.random() < 0.3:
        labels["tier"] = rng.choice(("a", "b"))
    kinds: dict[str, list[Any]] = {
        "required": [],
        "anti": [],
        "preferred": [],
        "preferred_anti": [],
    }
    for kind in kinds:
        if rng.random() < 0.3:
            made = term(rng.choice(KEYS), in_("app", rng.choice(APPS)))
            kinds[kind].append((rng.randint(1, 100), made) if kind.startswith("pref") else made)
    if rng.random() < 0.1:
        kinds["anti"].append(term("host", exists("tier")))
    return make_pod(
        name, labels=labels, node_name=node_name, uid=name, affinity=pod_affinity(**kinds)
    )


def random_node(rng: random.Random, name: str):
    labels = {"host": name, "zone": rng.choice(("z1", "z2", "z3"))}
    if rng.random() < 0.6:
        labels["rack"] = rng.choice(("r1", "r2"))
    return make_node(name, labels=labels)


def outcome(plug: InterPodAffinity, snap: Cache, incoming: Pod):
    table, info = snap.snapshot(), PodInfo.of(incoming)
    state = CycleState()
    _, status = plug.pre_filter(state, info, table)
    result: list[object] = [status.code]
    if status.is_success():
        computed = state.read(PRE_FILTER_STATE_KEY, PreFilterState)
        counts = (computed.existing_anti, computed.affinity, computed.anti)
        result += [c.as_dict() for c in counts]
        result.append(plug.filter_all(state, info, table).codes.tolist())
    rows = np.arange(table.num_nodes, dtype=np.intp)
    status = plug.pre_score(state, info, table, rows)
    result.append(status.code)
    if status.is_success():
        result.append(state.read(PRE_SCORE_STATE_KEY, PreScoreState).scores.as_dict())
        result.append(plug.score_all(state, info, table, rows).tolist())
    return result


@pytest.mark.parametrize("seed", range(6))
def test_long_lived_plugin_matches_a_fresh_one(seed):
    rng = random.Random(seed)
    snap = snapshot([random_node(rng, f"n{i}") for i in range(8)])
    live = plugin(snap)
    pods: dict[str, Pod] = {}
    for step in range(120):
        names = list(snap.snapshot().names)
        action = rng.random()
        if action < 0.35 or not pods:
            made = random_pod(rng, f"p{step}", rng.choice(names))
            pods[made.metadata.name] = made
            snap.add_pod(made)
        elif action < 0.45:
            made = random_pod(rng, f"p{step}", None)
            snap.assume(PodInfo.of(made), rng.choice(names))
        elif action < 0.6:
            victim = pods.pop(rng.choice(sorted(pods)))
            snap.remove_pod(victim.metadata.uid)
        elif action < 0.75:
            old = pods[rng.choice(sorted(pods))]
            relabelled = random_pod(rng, old.metadata.name, old.spec.node_name)
            pods[old.metadata.name] = relabelled
            snap.add_pod(relabelled)
        elif action < 0.85:
            old = pods[rng.choice(sorted(pods))]
            moved = random_pod(rng, old.metadata.name, rng.choice(names))
            pods[old.metadata.name] = moved
            snap.add_pod(moved)
        elif action < 0.92:
            snap.add_node(random_node(rng, rng.choice([*names, f"n{step}"])))
        elif len(names) > 2:
            snap.remove_node(rng.choice(names))
        if step % 3 == 0:
            incoming = random_pod(rng, f"incoming{step}", None)
            assert outcome(live, snap, incoming) == outcome(plugin(snap), snap, incoming), step


def test_several_tables_each_keep_an_index():
    rng = random.Random(7)
    first = snapshot(
        [random_node(rng, "a"), random_node(rng, "b")],
        [make_pod(fresh(), labels={"app": "web"}, node_name="a")],
    )
    second = snapshot(
        [random_node(rng, "c")], [make_pod(fresh(), labels={"app": "db"}, node_name="c")]
    )
    plug = plugin(first)
    incoming = make_pod(fresh(), affinity=pod_affinity([term("host", in_("app", "web"))]))
    for _ in range(2):
        assert outcome(plug, first, incoming)[0] == outcome(plugin(first), first, incoming)[0]
        assert outcome(plug, second, incoming) == outcome(plugin(second), second, incoming)
