"""ksched bench: the scheduler_perf workload shapes, cycle and embedded modes, small."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bench.config import load_workloads
from bench.cycle import build_snapshot
from bench.embedded import bench_embedded
from services.cli.main import main

WORKLOADS = load_workloads()

SHAPES = sorted(WORKLOADS)
STEADY = [
    shape
    for shape in SHAPES
    if WORKLOADS[shape].churn is None
    and WORKLOADS[shape].scheduler_config is None
    and not WORKLOADS[shape].timed_to_binding
    and WORKLOADS[shape].dra is None
]
"""The shapes cycle mode places every pod of: no churn, no profile of their own, no
pods that must preempt first, no DRA claims (their claim controller is the informer's)."""
FIELDS = {
    "workload",
    "mode",
    "nodes",
    "init_pods",
    "pods",
    "pods_per_second",
    "p50_ms",
    "p99_ms",
    "max_rss_mb",
    "messages_per_pod",
    "revision",
}
CPU_FIELDS = {
    "cpu_ms_per_pod",
    "cpu_ms_per_pod_total",
    "cycle_cpu_ms_per_pod",
    "cpu_ratio_to_cycle",
}
"""What embedded mode says of its CPU (bench.cpu): one process, the cycle inside it."""


def test_every_upstream_shape_is_offered() -> None:
    assert SHAPES == sorted(
        [
            "SchedulingBasic",
            "SchedulingNodeAffinity",
            "TopologySpreading",
            "SchedulingPodAntiAffinity",
            "SchedulingPodAffinity",
            "Unschedulable",
            "GangScheduling",
            "GangSchedulingNative",
            "PreemptionBasic",
            "PreemptionAsync",
            "SchedulingWithMixedChurn",
            "SchedulingDaemonset",
            "SchedulingWithResourceClaimTemplate",
            "SchedulingWithResourceClaim",
            "SteadyStateClusterResourceClaimTemplate_empty",
            "SteadyStateClusterResourceClaimTemplate_half",
            "SteadyStateClusterResourceClaimTemplate_full",
        ]
    )


@pytest.mark.parametrize("shape", STEADY)
def test_cycle_mode_prints_the_report(shape: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", shape, "--nodes", "50", "--pods", "20", "--mode", "cycle"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert set(report) == FIELDS | {"unschedulable", "cycle_cpu_ms_per_pod"}
    assert (report["workload"], report["mode"], report["nodes"], report["pods"]) == (
        shape,
        "cycle",
        WORKLOADS[shape].total_nodes(50),  # SchedulingDaemonset: one more, its own
        20,
    )
    assert report["init_pods"] == WORKLOADS[shape].counts(50)[0]
    assert report["unschedulable"] == 0
    assert report["pods_per_second"] > 0
    assert 0 < report["p50_ms"] <= report["p99_ms"]
    assert report["cycle_cpu_ms_per_pod"] >= 0


@pytest.mark.parametrize("shape", [s for s in SHAPES if WORKLOADS[s].steady is None])
async def test_embedded_mode_schedules_every_shape(shape: str) -> None:
    workload = WORKLOADS[shape]
    init, _ = workload.counts(20)
    report = await bench_embedded(workload, 20, init, 10)
    churned = {"unschedulable_churn", "churn_events"} if workload.churn else set()
    assert set(report) == FIELDS | CPU_FIELDS | churned
    assert set(report["cpu_ms_per_pod"]) == {"embedded"}  # one process: the whole pipeline
    assert (report["mode"], report["pods"], report["init_pods"]) == ("embedded", 10, init)


@pytest.mark.parametrize("shape", [s for s in SHAPES if WORKLOADS[s].steady is not None])
async def test_embedded_steady_state_keeps_replacing_bound_pods(shape: str) -> None:
    workload = WORKLOADS[shape]
    assert workload.steady is not None
    short = replace(workload, steady=replace(workload.steady, duration=1.0))
    report = await bench_embedded(short, 20, 0, workload.steady.in_flight)
    objects, _ = workload.setup(20, 0, workload.steady.in_flight)
    allocated = sum(1 for kind, o in objects if kind == "resourceclaim" and "status" in o)
    free = 20 * 10 - allocated  # 10 devices per node
    assert free >= 1
    # More pods bound in the window than could ever be placed at once: bound ones were
    # deleted and replaced (their devices freed by the claim controller).
    assert isinstance(report["pods"], int)
    assert report["pods"] > min(workload.steady.in_flight, free)


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        (5000, {"SchedulingBasic": (1000, 10000), "SchedulingPodAntiAffinity": (1000, 2000)}),
        (50, {"SchedulingBasic": (10, 100), "SchedulingPodAffinity": (50, 50)}),
    ],
)
def test_counts_scale_upstream_s_5000_node_case(
    nodes: int, expected: dict[str, tuple[int, int]]
) -> None:
    for shape, counts in expected.items():
        assert WORKLOADS[shape].counts(nodes) == counts
    assert WORKLOADS["SchedulingBasic"].counts(nodes, init=3, measured=7) == (3, 7)


def test_templates_follow_upstream() -> None:
    spreading = WORKLOADS["TopologySpreading"]
    zones = [
        spreading.node(i)["metadata"]["labels"]["topology.kubernetes.io/zone"] for i in range(4)
    ]
    assert zones == ["moon-1", "moon-2", "moon-3", "moon-1"]
    constraint = spreading.measured(0)["spec"]["topologySpreadConstraints"][0]
    assert (constraint["maxSkew"], constraint["whenUnsatisfiable"]) == (5, "DoNotSchedule")
    anti = WORKLOADS["SchedulingPodAntiAffinity"].measured(3)
    assert anti["metadata"]["namespace"] == "sched-1"
    term = anti["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"] == {"matchLabels": {"color": "green"}}
    node = WORKLOADS["SchedulingBasic"].node(7)
    assert node["status"]["allocatable"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    requests = WORKLOADS["SchedulingNodeAffinity"].measured(0)["spec"]["containers"][0]
    assert requests["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}


def test_init_pods_are_bound_round_robin() -> None:
    snapshot = build_snapshot(WORKLOADS["SchedulingPodAffinity"], 4, 10)
    table = snapshot.snapshot()
    assert table.requested[:, 3].tolist() == [3, 3, 2, 2]  # pods per node


def test_gang_scheduling_puts_the_measured_pods_in_groups_of_eight() -> None:
    gangs = WORKLOADS["GangScheduling"]
    assert gangs.counts(5000) == (1000, 10000)
    groups = gangs.groups(10000)
    assert len(groups) == 1250
    assert {g["spec"]["minMember"] for g in groups} == {8}
    labels = [gangs.measured(i)["metadata"]["labels"] for i in (0, 7, 8, 9999)]
    assert [lab["scheduling.x-k8s.io/pod-group"] for lab in labels] == [
        "group-0",
        "group-0",
        "group-1",
        "group-1249",
    ]
    assert groups[1]["metadata"]["namespace"] == gangs.measured(8)["metadata"]["namespace"]
    # The last group of an odd count asks for the members it has.
    assert [g["spec"]["minMember"] for g in gangs.groups(10)] == [8, 2]
    assert gangs.groups(10)[0]["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"
    assert gangs.groups(10)[1]["metadata"]["creationTimestamp"] == "2024-01-01T00:00:01Z"


async def test_gang_scheduling_binds_every_member_in_embedded_mode() -> None:
    workload = WORKLOADS["GangScheduling"]
    report = await bench_embedded(workload, 20, 0, 24)
    assert report["pods"] == 24  # bound, not merely decided


@pytest.mark.parametrize(
    "shape",
    ["GangScheduling", "SchedulingWithResourceClaimTemplate", "SchedulingWithResourceClaim"],
)
def test_cycle_mode_refuses_a_workload_that_needs_the_binding_cycle(
    shape: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", shape, "--nodes", "20", "--mode", "cycle"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "use --mode embedded or --mode services" in line


@pytest.mark.parametrize(
    "shape", ["SchedulingWithResourceClaimTemplate", "SchedulingWithResourceClaim"]
)
async def test_dra_workloads_bind_every_pod_in_embedded_mode(shape: str) -> None:
    report = await bench_embedded(WORKLOADS[shape], 4, 10, 10)
    assert report["pods"] == 10


def test_cycle_mode_times_the_preemption_decisions(capsys: pytest.CaptureFixture[str]) -> None:
    # The cycle alone decides each preemption but nobody deletes the victims.
    argv = ["bench", "PreemptionBasic", "--nodes", "20", "--mode", "cycle"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (report["init_pods"], report["pods"], report["unschedulable"]) == (80, 20, 20)
