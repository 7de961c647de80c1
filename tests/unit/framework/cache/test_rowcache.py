"""Cached per-node scores always equal scores computed from scratch."""

from __future__ import annotations

import random

import numpy as np
import pytest

from services.framework.api.interface import CycleState
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    ResourceSpec,
)
from services.framework.plugins.noderesources.balanced_allocation import BalancedAllocation
from services.framework.plugins.noderesources.least_allocated import least_requested_score
from services.framework.plugins.noderesources.resource_allocation import ResourceAllocationScorer
from tests.builders import make_node, make_pod

LEAST = ResourceAllocationScorer(
    "LeastAllocated",
    (ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)),
    least_requested_score,
)
SIZES = [("100m", "128Mi"), ("500m", "1Gi"), ("2", "4Gi")]


def random_step(rng: random.Random, snapshot: Cache, step: int) -> None:
    names = list(snapshot.snapshot().names)
    action = rng.choice(["assume", "assume", "bind", "forget", "delete", "node", "usage"])
    cpu, memory = rng.choice(SIZES)
    pod = make_pod(f"p{step}", uid=f"u{step}", requests={"cpu": cpu, "memory": memory})
    if action == "assume":
        snapshot.assume(PodInfo.of(pod), rng.choice(names))
    elif action == "bind":
        snapshot.add_pod(
            make_pod(f"p{step}", uid=f"u{step}", requests={"cpu": cpu}, node_name=rng.choice(names))
        )
    elif action in ("forget", "delete"):
        uid = f"u{rng.randrange(max(step, 1))}"
        snapshot.forget(uid) if action == "forget" else snapshot.remove_pod(uid)
    elif action == "node":
        snapshot.add_node(
            make_node(
                rng.choice(names),
                allocatable={"cpu": rng.choice(["4", "8"]), "memory": "16Gi", "pods": 110},
            )
        )
    else:
        snapshot.correct_usage(rng.choice(names), {"cpu": rng.randrange(8000), "pods": 1})


@pytest.mark.parametrize("seed", range(5))
def test_cached_scores_equal_fresh_scores_after_every_change(seed: int) -> None:
    rng = random.Random(seed)
    snapshot = Cache()
    for i in range(30):
        snapshot.add_node(
            make_node(f"n{i}", allocatable={"cpu": "8", "memory": "16Gi", "pods": 110})
        )
    balanced = BalancedAllocation(NodeResourcesBalancedAllocationArgs())
    for step in range(300):
        random_step(rng, snapshot, step)
        table = snapshot.snapshot()
        rows = np.arange(table.num_nodes, dtype=np.intp)
        if step % 3 == 0:
            rows = rows[rng.randrange(2) :: 2]  # a subset, as after filtering
        cpu, memory = rng.choice(SIZES)
        pod = PodInfo.of(make_pod("incoming", requests={"cpu": cpu, "memory": memory}))
        requests = LEAST.pod_requests(pod)
        assert (
            LEAST.score(table, rows, requests).tolist()
            == LEAST._score_rows(table, rows, requests).tolist()
        )
        state = CycleState()
        balanced.pre_score(state, pod, table, rows)
        fresh = balanced._score_rows(table, rows, balanced.requests.pod_requests(pod))
        assert balanced.score_all(state, pod, table, rows).tolist() == fresh.tolist()
