"""``--mode cycle`` on SchedulingBasic, small: every measured pod is placed, no node is
overcommitted, and the figures agree with each other."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from bench.command import bench_cycle
from bench.config import load_workloads
from bench.cycle import run_cycle
from contracts.quantity import resource_amount

BASIC = load_workloads()["SchedulingBasic"]
RESOURCES = ("cpu", "memory", "pods")


def _requests(pod: dict[str, Any]) -> dict[str, int]:
    total = {"pods": 1}
    for container in pod["spec"]["containers"]:
        for name, text in container["resources"]["requests"].items():
            total[name] = total.get(name, 0) + resource_amount(name, text)
    return total


@pytest.mark.parametrize(("nodes", "init", "pods"), [(1, 0, 40), (13, 13, 200), (200, 40, 120)])
def test_every_measured_pod_is_placed_and_no_node_is_overcommitted(
    nodes: int, init: int, pods: int
) -> None:
    run = run_cycle(BASIC, nodes, init, pods)
    assert run.unschedulable == 0
    assert len(run.placed) == pods == len(run.latencies)
    assert set(run.placed) == {BASIC.measured(i)["metadata"]["uid"] for i in range(pods)}

    used: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(RESOURCES, 0))
    bound = [(BASIC.init(i, nodes), BASIC.init(i, nodes)["spec"]["nodeName"]) for i in range(init)]
    measured = [(BASIC.measured(i), None) for i in range(pods)]
    for pod, node in [*bound, *measured]:
        node = node or run.placed[pod["metadata"]["uid"]]
        for name, amount in _requests(pod).items():
            used[node][name] += amount
    for i in range(nodes):
        node = BASIC.node(i)
        allocatable = node["status"]["allocatable"]
        for name in RESOURCES:
            limit = resource_amount(name, allocatable[name])
            assert used[node["metadata"]["name"]][name] <= limit, (node["metadata"]["name"], name)


def test_a_full_cluster_leaves_the_rest_unschedulable() -> None:
    # One node takes 40 pods of 100m CPU (4 CPU): the 41st and later fit nowhere.
    run = run_cycle(BASIC, 1, 0, 45)
    assert (len(run.placed), run.unschedulable) == (40, 5)


@pytest.mark.parametrize(("nodes", "pods"), [(1, 50), (5, 60), (50, 30)])
def test_the_report_s_figures_agree(nodes: int, pods: int) -> None:
    """Each node takes 40 pods (4 CPU of 100m pods): pods == placed + unschedulable."""
    report = bench_cycle(BASIC, nodes, 0, pods)
    assert report["pods"] == pods
    assert report["unschedulable"] == max(0, pods - 40 * nodes)
    assert 0 <= report["p50_ms"] <= report["p99_ms"]
    assert report["pods_per_second"] > 0
