"""percentageOfNodesToScore: numFeasibleNodesToFind, the rotating search, the config."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest

from services.framework.api.interface import PreFilterResult
from services.framework.config import (
    DEFAULT_PLUGINS,
    PluginRef,
    Plugins,
    PluginSet,
    default_profile,
    load_config,
)
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.framework.runtime.profile import merge_plugins
from services.framework.runtime.sampling import first_feasible, num_feasible_nodes_to_find
from tests.builders import make_node, make_pod
from tests.unit.framework.fakes import FixedPreFilter, framework_with
from tests.unit.framework.helpers import snapshot_of

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@pytest.mark.parametrize(
    ("percentage", "num_all_nodes", "expected"),
    [
        (0, 10, 10),  # fewer than minFeasibleNodesToFind: every node
        (40, 10, 10),
        (100, 99, 99),
        (0, 100, 100),  # adaptive 50% of 100 = 50, raised to the minimum
        (0, 1000, 420),  # adaptive 50 - 1000/125 = 42%
        (0, 5000, 500),  # adaptive 50 - 40 = 10%
        (0, 6000, 300),  # adaptive 50 - 48 = 2%, raised to 5%
        (0, 20000, 1000),  # 5%
        (40, 1000, 400),
        (40, 6000, 2400),
        (1, 1000, 100),  # 10 nodes, raised to the minimum
        (100, 5000, 5000),
        (50, 1001, 500),  # integer division, as Go's int32
    ],
)
def test_num_feasible_nodes_to_find(percentage: int, num_all_nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, num_all_nodes) == expected


def rows(*values: int) -> np.ndarray[Any, np.dtype[np.intp]]:
    return np.asarray(values, dtype=np.intp)


PASSED = np.array([False, True, False, True, False, False, True, True, False, True])
"""Rows 1, 3, 6, 7 and 9 pass."""


@pytest.mark.parametrize(
    ("start", "k", "feasible", "processed"),
    [
        # Stops at the third feasible node (row 6): rows 4 and 5 were checked on the way.
        (0, 2, [1, 3], [0, 1, 2, 3, 4, 5]),
        (0, 1, [1], [0, 1, 2]),
        # From row 8, wrapping: 8 ✗, 9 ✓, 0 ✗, 1 ✓, 2 ✗, then 3 is the third feasible.
        (8, 2, [9, 1], [8, 9, 0, 1, 2]),
        (18, 2, [9, 1], [8, 9, 0, 1, 2]),  # the start index is taken modulo the candidates
        # Fewer feasible nodes than k: every node is processed.
        (0, 5, [1, 3, 6, 7, 9], list(range(10))),
        (3, 9, [3, 6, 7, 9, 1], [3, 4, 5, 6, 7, 8, 9, 0, 1, 2]),
    ],
)
def test_first_feasible(start: int, k: int, feasible: list[int], processed: list[int]) -> None:
    found = first_feasible(np.arange(10, dtype=np.intp), PASSED, start, k)
    assert found.feasible.tolist() == feasible
    assert found.processed.tolist() == processed


def test_first_feasible_over_a_subset_of_rows() -> None:
    found = first_feasible(rows(2, 3, 7, 9), PASSED, 1, 1)
    assert (found.feasible.tolist(), found.processed.tolist()) == ([3], [3])
    found = first_feasible(rows(2, 3, 7, 9), PASSED, 2, 1)
    assert (found.feasible.tolist(), found.processed.tolist()) == ([7], [7])
    empty = first_feasible(rows(), PASSED, 5, 3)
    assert (empty.feasible.tolist(), empty.processed.tolist()) == ([], [])


def sampled(percentage: int | None, *, scores: bool = True, seed: int = 0) -> Framework:
    custom = None if scores else Plugins(score=PluginSet(disabled=(PluginRef("*"),)))
    profile = dataclasses.replace(
        default_profile(),
        plugins=merge_plugins(DEFAULT_PLUGINS, custom),
        percentage_of_nodes_to_score=percentage,
    )
    return Framework(profile, in_tree_registry(), rng=random.Random(seed))


def nodes(count: int, small: frozenset[int] | set[int] = frozenset()) -> list[Any]:
    """``count`` nodes n0…; those in ``small`` have 1 CPU (a 2-CPU pod misses them)."""
    return [
        make_node(f"n{i}", allocatable={"cpu": "1" if i in small else "4", "pods": 110})
        for i in range(count)
    ]


def evaluated(framework: Framework, snapshot: Any, pod: Any) -> tuple[int, int, list[str]]:
    result = framework.schedule_pod(snapshot, pod, explain=True)
    assert result.explanation is not None
    return result.evaluated_nodes, result.feasible_nodes, list(result.explanation.filter)


class TestSampledSearch:
    def test_not_set_scores_every_node(self) -> None:
        snapshot = snapshot_of(nodes(300))
        result = sampled(None).schedule_pod(snapshot, make_pod(requests={"cpu": "1"}))
        assert (result.evaluated_nodes, result.feasible_nodes) == (300, 300)

    def test_small_clusters_are_searched_whole(self) -> None:
        snapshot = snapshot_of(nodes(99))
        result = sampled(10).schedule_pod(snapshot, make_pod(requests={"cpu": "1"}))
        assert (result.evaluated_nodes, result.feasible_nodes) == (99, 99)

    def test_rotation_across_cycles(self) -> None:
        # 250 nodes, adaptive: 50 - 2 = 48% → 120 nodes per cycle.
        framework = sampled(0)
        snapshot = snapshot_of(nodes(250))
        pod = make_pod(requests={"cpu": "1"})
        names = [f"n{i}" for i in range(250)]
        first = evaluated(framework, snapshot, pod)
        assert first == (120, 120, names[:120])
        assert framework.next_start_node_index.value == 120
        second = evaluated(framework, snapshot, pod)
        assert second == (120, 120, names[120:240])
        assert framework.next_start_node_index.value == 240
        third = evaluated(framework, snapshot, pod)  # wraps: n240…n249, then n0…n109
        assert third == (120, 120, sorted(names[240:] + names[:110], key=names.index))
        assert framework.next_start_node_index.value == 110

    def test_rejected_nodes_up_to_the_next_feasible_one_are_processed(self) -> None:
        # 300 nodes, 10% → 30, raised to 100. Every third node is too small: the 100th
        # feasible node is n148, the 101st n150, so n149 is processed (and rejected).
        small = set(range(2, 300, 3))
        framework = sampled(10)
        snapshot = snapshot_of(nodes(300, small))
        pod = make_pod(requests={"cpu": "2"})
        count, feasible, shown = evaluated(framework, snapshot, pod)
        assert (count, feasible) == (150, 100)
        assert shown == [f"n{i}" for i in range(150)]
        assert framework.next_start_node_index.value == 150
        result = framework.schedule_pod(snapshot, pod, explain=True)
        assert result.explanation is not None
        assert next(iter(result.explanation.filter)) == "n150"
        assert result.evaluated_nodes == 150  # n150 … n299, then stopped at n0
        assert framework.next_start_node_index.value == 0

    def test_without_score_plugins_one_feasible_node_is_enough(self) -> None:
        framework = sampled(50, scores=False)
        snapshot = snapshot_of(nodes(200, small={0, 1}))
        pod = make_pod(requests={"cpu": "2"})
        result = framework.schedule_pod(snapshot, pod)
        # n0 ✗, n1 ✗, n2 ✓, and the search stops at n3, the second feasible node.
        assert (result.node, result.evaluated_nodes, result.feasible_nodes) == ("n2", 3, 1)
        assert framework.next_start_node_index.value == 3
        assert framework.schedule_pod(snapshot, pod).node == "n3"

    def test_no_fit_processes_every_node_and_keeps_the_rotation(self) -> None:
        framework = sampled(0)
        framework.next_start_node_index.value = 7
        snapshot = snapshot_of(nodes(150))
        result = framework.schedule_pod(snapshot, make_pod(requests={"cpu": "8"}))
        assert result.message == (
            "0/150 nodes are available: 150 Insufficient cpu. no new claims to deallocate,"
            " preemption: 0/150 nodes are "
            "available: 150 No preemption victims found for incoming pod."
        )
        assert framework.next_start_node_index.value == 7

    def test_nominated_node_that_fits_is_the_only_one_evaluated(self) -> None:
        framework = sampled(0)
        snapshot = snapshot_of(nodes(150))
        pod = make_pod(requests={"cpu": "1"}, nominated_node_name="n77")
        result = framework.schedule_pod(snapshot, pod)
        assert (result.node, result.evaluated_nodes, result.feasible_nodes) == ("n77", 1, 1)
        assert framework.next_start_node_index.value == 0

    def test_pre_filter_result_is_the_list_searched(self) -> None:
        # 112 of 400 nodes allowed: numFeasibleNodesToFind counts those (all of them at
        # 100%); the rotation advances modulo all 400 nodes.
        allowed = frozenset(f"n{i}" for i in range(0, 400, 10)) | {f"n{i}" for i in range(80)}
        narrowing = FixedPreFilter(result=PreFilterResult(allowed))
        framework = framework_with(narrowing, pre_filter=["FixedPreFilter"])
        framework.profile = dataclasses.replace(framework.profile, percentage_of_nodes_to_score=100)
        result = framework.schedule_pod(snapshot_of(nodes(400)), make_pod(requests={"cpu": "1"}))
        assert (result.evaluated_nodes, result.feasible_nodes) == (112, 112)
        assert framework.next_start_node_index.value == 112


@pytest.mark.parametrize(
    ("global_percentage", "profile_percentage", "expected"),
    [
        (None, None, None),
        (None, 40, 40),
        (40, None, 40),
        (0, None, 0),
        (100, 50, 50),
        (40, 0, 0),
    ],
)
def test_profile_percentage_wins_over_the_global_one(
    global_percentage: int | None, profile_percentage: int | None, expected: int | None
) -> None:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    raw: dict[str, Any] = {**HEAD, "profiles": [profile]}
    if global_percentage is not None:
        raw["percentageOfNodesToScore"] = global_percentage
    if profile_percentage is not None:
        profile["percentageOfNodesToScore"] = profile_percentage
    loaded = load_config(raw)
    assert loaded.profiles[0].percentage_of_nodes_to_score == expected
    assert loaded.percentage_of_nodes_to_score == global_percentage


@pytest.mark.parametrize("where", ["global", "profile"])
def test_percentage_out_of_range_is_refused(where: str) -> None:
    from services.framework.config import ConfigError

    raw: dict[str, Any] = {**HEAD, "profiles": [{"schedulerName": "s"}]}
    target = raw if where == "global" else raw["profiles"][0]
    target["percentageOfNodesToScore"] = -1
    with pytest.raises(ConfigError, match=r"not in valid range \[0-100\]"):
        load_config(raw)
