"""``ksched capacity``: counts worked out by hand on small clusters, the termination
reason, the report's shape, and bad input."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from contracts.k8s import POD_GROUP_LABEL, Node, Pod, Toleration
from services.cli.capacity import capacity, copy_of, exclude_nodes, load_template
from services.cli.capacity_report import CapacityReport
from services.cli.errors import InputError
from services.cli.main import main
from services.cli.simulate import load_cluster, simulate
from services.framework.config import Profile
from tests.builders import make_node, make_pod, manifest
from tests.builders.constraints import anti_affine, ported, zoned_node
from tests.unit.cli.coscheduling_support import upstream_profiles

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
TAINT = ("dedicated", "gpu", "NoSchedule")
TOLERATES = Toleration(key="dedicated", operator="Exists", effect="NoSchedule")


def node(name: str, cpu: str = "4", memory: str = "32Gi", pods: int = 110, **kw: object) -> Node:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    return make_node(name, allocatable=allocatable, **kw)  # type: ignore[arg-type]


def cpu_pod(name: str = "web", cpu: str = "1", **kw: object) -> Pod:
    return make_pod(name, requests={"cpu": cpu}, **kw)  # type: ignore[arg-type]


async def run(
    objects: Sequence[object],
    template: Pod,
    *,
    max_limit: int = 0,
    exclude: Sequence[str] = (),
    group: str | None = None,
    profiles: Sequence[Profile] | None = None,
    allow_preemption: bool = False,
) -> CapacityReport:
    """``ksched capacity`` of ``template`` (in the PodGroup document ``group``, if
    given) on the cluster of ``objects``."""
    documents = exclude_nodes(load_cluster(manifest(*objects), "cluster.yaml"), exclude)
    pod = load_template(manifest(*filter(None, (group, template))), "pod.yaml")
    return await capacity(
        documents,
        pod,
        max_limit=max_limit,
        profiles=profiles,
        allow_preemption=allow_preemption,
        now=WHEN,
    )


@dataclass(frozen=True)
class Case:
    cluster: tuple[object, ...]
    template: Pod
    placed: dict[str, int]
    reason: str = "FailedScheduling"
    max_limit: int = 0
    exclude: tuple[str, ...] = ()
    failures: dict[str, list[str]] = field(default_factory=dict)
    """Node → the reasons its filter gave the failing copy (checked when given)."""


CASES = {
    # 4 cpu / 1 = 4 on n1, 2 / 1 = 2 on n2.
    "cpu": Case(
        (node("n1"), node("n2", cpu="2")),
        cpu_pod(),
        {"n1": 4, "n2": 2},
        failures={"n1": ["Insufficient cpu"], "n2": ["Insufficient cpu"]},
    ),
    # 4 cpu, 3 of them taken by a bound pod: 1 left.
    "cpu-with-a-bound-pod": Case(
        (node("n1"), cpu_pod("db", "3", node_name="n1")), cpu_pod(), {"n1": 1}
    ),
    # 4Gi / 1Gi = 4, 3Gi / 1Gi = 3; cpu is plentiful.
    "memory": Case(
        (node("n1", memory="4Gi"), node("n2", memory="3Gi")),
        make_pod("web", requests={"memory": "1Gi"}),
        {"n1": 4, "n2": 3},
        failures={"n1": ["Insufficient memory"], "n2": ["Insufficient memory"]},
    ),
    # allocatable pods 3 (one taken by a bound pod) and 2: 2 + 2.
    "pod-count": Case(
        (node("n1", pods=3), node("n2", pods=2), make_pod("old", node_name="n1")),
        make_pod("web", containers=1),
        {"n1": 2, "n2": 2},
        failures={"n1": ["Too many pods"], "n2": ["Too many pods"]},
    ),
    # n1's taint is not tolerated: only n2's 2 cpu.
    "untolerated-taint": Case(
        (node("n1", taints=[TAINT]), node("n2", cpu="2")),
        cpu_pod(),
        {"n2": 2},
        failures={
            "n1": ["node(s) had untolerated taint(s)"],
            "n2": ["Insufficient cpu"],
        },
    ),
    "tolerated-taint": Case(
        (node("n1", taints=[TAINT]), node("n2", cpu="2")),
        cpu_pod(tolerations=[TOLERATES]),
        {"n1": 4, "n2": 2},
    ),
    # Required anti-affinity to itself per hostname: one per node, and none on n1,
    # which runs one already.
    "anti-affinity": Case(
        (zoned_node("n1"), zoned_node("n2"), zoned_node("n3"), anti_affine("old", node_name="n1")),
        anti_affine("web"),
        {"n2": 1, "n3": 1},
    ),
    # hostPort 8080 once per node; n1's is taken.
    "host-ports": Case(
        (node("n1"), node("n2"), node("n3"), ported("old", node_name="n1")),
        ported("web"),
        {"n2": 1, "n3": 1},
        failures={
            "n1": ["node(s) didn't have free ports for the requested pod ports"],
            "n2": ["node(s) didn't have free ports for the requested pod ports"],
            "n3": ["node(s) didn't have free ports for the requested pod ports"],
        },
    ),
    # 6 would fit; the limit stops at 3.
    "max-limit": Case(
        (node("n1"), node("n2", cpu="2")),
        cpu_pod(),
        {"n1": 2, "n2": 1},
        reason="LimitReached",
        max_limit=3,
    ),
    # A limit above what fits: the cluster ends it.
    "max-limit-not-reached": Case((node("n1", cpu="2"),), cpu_pod(), {"n1": 2}, max_limit=5),
    # Without n2 (and the pod bound there), n1's 4 cpu.
    "exclude-nodes": Case(
        (node("n1"), node("n2", cpu="2"), cpu_pod("db", "1", node_name="n2")),
        cpu_pod(),
        {"n1": 4},
        exclude=("n2",),
        failures={"n1": ["Insufficient cpu"]},
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
async def test_counts_worked_out_by_hand(case: Case) -> None:
    report = await run(case.cluster, case.template, max_limit=case.max_limit, exclude=case.exclude)
    assert dict(report.instances_per_node) == case.placed
    assert report.instances == sum(case.placed.values())
    assert report.termination.reason == case.reason
    if case.failures:
        got = {n: list(v["reasons"]) for n, v in report.termination.node_failures.items()}
        assert got == case.failures


async def test_the_limit_is_worded_as_cluster_capacity_words_it() -> None:
    report = await run((node("n1"),), cpu_pod(), max_limit=2)
    assert report.termination.message == "Maximum number of pods simulated: 2"
    assert report.termination.node_failures == {}


async def test_the_termination_message_is_simulates_failed_scheduling() -> None:
    cluster = (node("n1"), node("n2", cpu="2", taints=[TAINT]), node("n3", pods=1))
    report = await run(cluster, cpu_pod())
    assert report.instances == 5  # n1: 4; n2 tainted; n3: 1 pod
    expected = (
        "0/3 nodes are available: 1 Insufficient cpu, 1 Too many pods, 1 node(s) had "
        "untolerated taint(s). no new claims to deallocate, preemption: 0/3 nodes are "
        "available: 1 Preemption is not helpful for scheduling, 2 No preemption victims "
        "found for incoming pod."
    )
    # What simulate says of the 6th of six such pods pending on the same cluster.
    copies = [cpu_pod(f"web-{i}") for i in range(6)]
    records = await simulate(load_cluster(manifest(*cluster, *copies), "c.yaml"), seed=0)
    (failed,) = [r for r in records if r.kind == "FailedScheduling"]
    assert failed.pod == "default/web-5"
    assert report.termination.message == failed.message
    assert failed.message == expected


async def test_a_pod_held_back_at_pre_enqueue_ends_the_run_at_once() -> None:
    report = await run((node("n1"),), make_pod("web", scheduling_gates=["wait"]))
    assert report.instances == 0
    assert report.termination.reason == "NotReadyForScheduling"
    assert report.termination.message == (
        "Scheduling is blocked due to non-empty scheduling gates (SchedulingGates)"
    )


LOW = (cpu_pod("low-a", node_name="n1", priority=0), cpu_pod("low-b", node_name="n1", priority=0))


@pytest.mark.parametrize(
    ("allowed", "instances", "preempted"),
    [
        (False, 0, None),  # the first copy fails; nothing is evicted
        # Each copy of priority 100 evicts one of the two priority-0 pods on n1's 2 cpu.
        (True, 2, [("default/vip-0", "n1", 1), ("default/vip-1", "n1", 1)]),
    ],
    ids=["not-allowed", "allowed"],
)
async def test_preemption_only_when_allowed(
    allowed: bool, instances: int, preempted: list[tuple[str, str, int]] | None
) -> None:
    report = await run(
        (node("n1", cpu="2"), *LOW), cpu_pod("vip", priority=100), allow_preemption=allowed
    )
    assert report.instances == instances
    message = report.termination.message
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    # Not allowed: the first attempt's, whose preemption would have found room.
    assert message.endswith("No preemption victims found for incoming pod.") == allowed
    got = report.preemptions
    summary = None if got is None else [(p.pod, p.node, len(p.victims)) for p in got]
    assert summary == preempted
    evicted = sorted(v for p in got or () for v in p.victims)
    assert evicted == (["default/low-a", "default/low-b"] if allowed else [])


def gang(min_member: int) -> str:
    return (
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: train}\n"
        f"spec: {{minMember: {min_member}, scheduleTimeoutSeconds: 10}}\n"
    )


@pytest.mark.parametrize(
    ("min_member", "cpus", "instances", "gangs"),
    [
        (3, ("4", "4"), 6, 2),  # 8 fit one by one; the third gang's third does not
        (5, ("4",), 0, 0),  # 4 would fit, the gang needs 5 at once
        (2, ("3", "1"), 4, 2),  # 3 + 1: a gang may span nodes
    ],
    ids=["two-of-three", "none-of-five", "spanning-nodes"],
)
async def test_whole_gangs_worked_out_by_hand(
    min_member: int, cpus: tuple[str, ...], instances: int, gangs: int
) -> None:
    cluster = [node(f"n{i}", cpu=cpu) for i, cpu in enumerate(cpus, start=1)]
    worker = cpu_pod("worker", labels={POD_GROUP_LABEL: "train"})
    report = await run(cluster, worker, group=gang(min_member), profiles=upstream_profiles())
    assert (report.instances, report.gangs) == (instances, gangs)
    assert report.termination.reason == "FailedScheduling"
    assert f"PodGroup default/train-{gangs} gets rejected" in report.termination.message
    described = {"name": "train", "minMember": min_member, "gangs": gangs}
    assert report.to_json()["podGroup"] == described


async def test_a_copy_may_not_take_the_name_of_a_pod_of_the_cluster() -> None:
    cluster = (node("n1"), cpu_pod("web-1", node_name="n1"))
    with pytest.raises(InputError) as refused:
        await run(cluster, cpu_pod("web"))
    assert str(refused.value) == (
        "the cluster has a pod default/web-1 already, the name of a copy (<name>-<i>): "
        "rename the one in --pod"
    )


def test_copies_are_named_as_cluster_capacity_names_them() -> None:
    template = cpu_pod("web", namespace="shop", node_name="n9", labels={"app": "web"})
    pod = load_template(manifest(template), "pod.yaml").pod
    meta, spec = copy_of(pod.raw, 3).raw["metadata"], copy_of(pod.raw, 3).raw["spec"]
    assert (meta["namespace"], meta["name"], meta["labels"]) == ("shop", "web-3", {"app": "web"})
    assert "uid" not in meta  # each copy gets its own, from its name
    assert "nodeName" not in spec  # as cluster-capacity resets it
    assert meta["annotations"] == {"ksched.io/explain": "true"}
    assert spec["containers"] == pod.raw["spec"]["containers"]


def write(tmp_path: Path, name: str, *objects: object) -> str:
    path = tmp_path / name
    path.write_text(manifest(*objects))
    return str(path)


def test_json_report_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write(tmp_path, "cluster.yaml", node("n1", cpu="2"), node("n2", cpu="1"))
    pod = write(tmp_path, "pod.yaml", make_pod("web", requests={"cpu": "1", "memory": "1Gi"}))
    assert main(["capacity", cluster, "--pod", pod, "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert datetime.strptime(report.pop("timestamp"), "%Y-%m-%dT%H:%M:%SZ")
    message = report["failReason"].pop("message")
    assert message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    verdict = {"plugin": "NodeResourcesFit", "status": "Unschedulable"}
    assert report == {
        "pod": {
            "namespace": "default",
            "name": "web",
            "requests": {"cpu": "1000m", "memory": "1073741824"},
            "nodeSelector": {},
        },
        "maxLimit": 0,
        "instances": 3,
        "instancesPerNode": {"n1": 2, "n2": 1},
        "failReason": {
            "reason": "FailedScheduling",
            "nodeFailures": {
                "n1": {**verdict, "reasons": ["Insufficient cpu"]},
                "n2": {**verdict, "reasons": ["Insufficient cpu"]},
            },
        },
    }


def test_yaml_report_reads_back_as_the_json_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path, "cluster.yaml", node("n1", cpu="2"))
    pod = write(tmp_path, "pod.yaml", cpu_pod())
    argv = ["capacity", cluster, "--pod", pod, "--max-limit", "1"]
    assert main([*argv, "-o", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main([*argv, "-o", "yaml"]) == 0
    as_yaml = yaml.safe_load(capsys.readouterr().out)
    assert {**as_yaml, "timestamp": None} == {**as_json, "timestamp": None}
    assert as_json["failReason"] == {
        "reason": "LimitReached",
        "message": "Maximum number of pods simulated: 1",
    }


def test_table_is_cluster_capacitys_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path, "cluster.yaml", node("n1", cpu="2"), node("n2", cpu="1"))
    pod = write(tmp_path, "pod.yaml", cpu_pod())
    assert main(["capacity", cluster, "--pod", pod]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "The cluster can schedule 3 instance(s) of the pod web."
    assert lines[1] == ""
    assert lines[2].startswith(
        "Termination reason: FailedScheduling: 0/2 nodes are available: 2 Insufficient cpu."
    )
    assert lines[3:] == [
        "",
        "Pod distribution among nodes:",
        "\t- n1: 2 instance(s)",
        "\t- n2: 1 instance(s)",
    ]


BAD_INPUT = {
    "two-pods": (
        ("pod.yaml", (cpu_pod("a"), cpu_pod("b"))),
        (),
        "ksched capacity: {pod}: expected one Pod (and the PodGroup it names), found 2 "
        "objects: pod a, pod b",
    ),
    "no-pod": (
        ("pod.yaml", (node("x"),)),
        (),
        "ksched capacity: {pod}: expected one Pod (and the PodGroup it names), found 1 "
        "objects: node x",
    ),
    "a-pod-group-the-pod-is-not-in": (
        ("pod.yaml", (gang(2), cpu_pod())),
        (),
        "ksched capacity: {pod}: the pod's label scheduling.x-k8s.io/pod-group names '', not "
        "the file's PodGroup 'train'",
    ),
    "unknown-excluded-node": (
        ("pod.yaml", (cpu_pod(),)),
        ("--exclude-nodes", "n1,nope"),
        "ksched capacity: --exclude-nodes: no node named nope in the cluster",
    ),
    "no-profile-schedules-it": (
        ("pod.yaml", (make_pod("web", scheduler_name="other"),)),
        (),
        "ksched capacity: the pod's schedulerName 'other' is no profile's (the "
        "configuration's: default-scheduler)",
    ),
    "missing-pod-file": (
        ("elsewhere.yaml", (cpu_pod(),)),
        (),
        "ksched capacity: cannot open {pod}: No such file or directory",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUT.values()), ids=list(BAD_INPUT))
def test_bad_input_is_one_line_and_exit_2(
    case: tuple[tuple[str, tuple[object, ...]], tuple[str, ...], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (name, objects), flags, line = case
    cluster = write(tmp_path, "cluster.yaml", node("n1"))
    write(tmp_path, name, *objects)
    pod = str(tmp_path / "pod.yaml")
    assert main(["capacity", cluster, "--pod", pod, *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [line.format(pod=pod)]
