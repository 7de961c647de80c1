"""``ksched capacity --ratio``: whole units of a workload mix, counted by hand on small
clusters; the unit that did not fit; the report's shape; and bad --ratio input."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.k8s import POD_GROUP_LABEL, Node, Pod
from services.cli.capacity import (
    capacity_mix,
    exclude_nodes,
    load_parts,
)
from services.cli.capacity_report import MixReport, print_report
from services.cli.errors import InputError
from services.cli.main import main
from services.cli.simulate import load_cluster
from services.framework.config import Profile
from tests.builders import make_node, make_pod, manifest
from tests.builders.constraints import ported
from tests.unit.cli.coscheduling_support import upstream_profiles

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
PORTS = "node(s) didn't have free ports for the requested pod ports"


def node(name: str, cpu: str = "4", pods: int = 110) -> Node:
    return make_node(name, allocatable={"cpu": cpu, "memory": "32Gi", "pods": pods})


def cpu_pod(name: str, cpu: str = "1", **kw: object) -> Pod:
    return make_pod(name, requests={"cpu": cpu}, **kw)  # type: ignore[arg-type]


def gang(min_member: int) -> str:
    return (
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: train}\n"
        f"spec: {{minMember: {min_member}, scheduleTimeoutSeconds: 10}}\n"
    )


WORKER = cpu_pod("worker", labels={POD_GROUP_LABEL: "train"})


async def run(
    cluster: Sequence[object],
    pods: Sequence[Sequence[object]],
    ratio: Sequence[int],
    *,
    max_limit: int = 0,
    profiles: Sequence[Profile] | None = None,
) -> MixReport:
    """``ksched capacity --ratio`` of the pod files ``pods`` (each its objects) on the
    cluster of ``cluster``."""
    documents = exclude_nodes(load_cluster(manifest(*cluster), "cluster.yaml"), ())
    files = [(manifest(*objects), f"pod{i}.yaml") for i, objects in enumerate(pods)]
    return await capacity_mix(
        documents, load_parts(files, ratio), max_limit=max_limit, profiles=profiles, now=WHEN
    )


@dataclass(frozen=True)
class Case:
    cluster: tuple[object, ...]
    pods: tuple[tuple[object, ...], ...]
    ratio: tuple[int, ...]
    units: int
    placed: dict[str, dict[str, int]]
    """Pod → node → copies bound in whole units; a pod whose nodes the scores choose
    gives only its total, under the node ``*``."""
    partial: dict[str, int] = field(default_factory=dict)
    reason: str = "FailedScheduling"
    max_limit: int = 0
    failures: dict[str, list[str]] = field(default_factory=dict)
    """Node → the reasons its filter gave the failing pod (checked when given)."""
    profiles: tuple[Profile, ...] | None = None


CASES = {
    # A unit is 3 * 1 + 1 * 2 = 5 cpu: two in 10; the third's first web finds none.
    "cpu-3:1": Case(
        (node("n1", cpu="10"),),
        ((cpu_pod("web"),), (cpu_pod("db", "2"),)),
        (3, 1),
        2,
        {"web": {"n1": 6}, "db": {"n1": 2}},
        failures={"n1": ["Insufficient cpu"]},
    ),
    # In 8 cpu: one unit (5), then the second's three webs (3 more: 8), and its db
    # finds none. The three webs are left out of the counts.
    "cpu-partial-unit": Case(
        (node("n1", cpu="8"),),
        ((cpu_pod("web"),), (cpu_pod("db", "2"),)),
        (3, 1),
        1,
        {"web": {"n1": 3}, "db": {"n1": 1}},
        partial={"web": 3},
        failures={"n1": ["Insufficient cpu"]},
    ),
    # Cpu for 7 units (3 * 8 cpu / (3 * 1 + 0.1)), but hostPort 8080 once per node:
    # the fourth unit's webs are bound, its db is not.
    "db-host-port": Case(
        (node("n1", cpu="8"), node("n2", cpu="8"), node("n3", cpu="8")),
        ((cpu_pod("web"),), (ported("db"),)),
        (3, 1),
        3,
        {"web": {"*": 9}, "db": {"n1": 1, "n2": 1, "n3": 1}},
        partial={"web": 3},
        failures={"n1": [PORTS], "n2": [PORTS], "n3": [PORTS]},
    ),
    # 4 pods a unit; the limit, 6, is checked after each whole unit: 8 when it stops.
    "max-limit": Case(
        (node("n1", cpu="100"),),
        ((cpu_pod("web"),), (cpu_pod("db"),)),
        (3, 1),
        2,
        {"web": {"n1": 6}, "db": {"n1": 2}},
        reason="LimitReached",
        max_limit=6,
    ),
    # Units of two copies of one pod: 5 cpu hold two, and one of a third.
    "one-pod-by-twos": Case(
        (node("n1", cpu="5"),),
        ((cpu_pod("web"),),),
        (2,),
        2,
        {"web": {"n1": 4}},
        partial={"web": 1},
    ),
    # A unit is a gang of two workers and a web, 3 cpu: two units in 8, then the third
    # gang (8 in all) is bound and its web is not.
    "gang-and-pod": Case(
        (node("n1", cpu="8"),),
        ((gang(2), WORKER), (cpu_pod("web"),)),
        (1, 1),
        2,
        {"worker": {"n1": 4}, "web": {"n1": 2}},
        partial={"worker": 2},
        failures={"n1": ["Insufficient cpu"]},
        profiles=tuple(upstream_profiles()),
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
async def test_whole_units_worked_out_by_hand(case: Case) -> None:
    report = await run(
        case.cluster, case.pods, case.ratio, max_limit=case.max_limit, profiles=case.profiles
    )
    assert report.units == case.units
    got = {
        part.pod.metadata.name: dict(part.instances_per_node)
        if "*" not in case.placed[part.pod.metadata.name]
        else {"*": part.instances}
        for part in report.parts
    }
    assert got == case.placed
    for part, count in zip(report.parts, case.ratio, strict=True):
        size = part.group.spec.min_member if part.group is not None else 1
        assert part.instances == report.units * count * size
    assert dict(report.partial_unit) == case.partial
    assert report.termination.reason == case.reason
    if case.failures:
        got_failures = {n: list(v["reasons"]) for n, v in report.termination.node_failures.items()}
        assert got_failures == case.failures


async def test_the_gang_of_a_mix_is_reported_as_whole_gangs() -> None:
    case = CASES["gang-and-pod"]
    report = await run(case.cluster, case.pods, case.ratio, profiles=case.profiles)
    worker = report.to_json()["pods"][0]
    assert worker["podGroup"] == {"name": "train", "minMember": 2, "gangs": 2}
    assert "podGroup" not in report.to_json()["pods"][1]
    table = io.StringIO()
    print_report(report, "table", table)
    assert table.getvalue().splitlines()[:3] == [
        "The cluster can schedule 2 unit(s) of 1 gang(s) of 2 worker + 1 web.",
        "That is 4 instance(s) of the pod worker and 2 of the pod web.",
        "That is 2 whole gang(s) of the pod group train (2 each).",
    ]


async def test_the_limit_counts_pods_of_every_kind() -> None:
    report = await run((node("n1", cpu="100"),), ((cpu_pod("web"),), (cpu_pod("db"),)), (1, 1))
    assert report.units == 50  # 100 cpu, 2 a unit: the cluster ends it without a limit
    limited = await run(
        (node("n1", cpu="100"),), ((cpu_pod("web"),), (cpu_pod("db"),)), (1, 1), max_limit=4
    )
    assert (limited.units, limited.termination.message) == (
        2,
        "Maximum number of pods simulated: 4",
    )


async def test_copies_are_numbered_per_pod() -> None:
    # The second unit's db is db-1 (not db-7, its number among all copies).
    cluster = (node("n1", cpu="100"), cpu_pod("db-1", node_name="n1"))
    with pytest.raises(InputError) as refused:
        await run(cluster, ((cpu_pod("web"),), (cpu_pod("db"),)), (3, 1))
    assert str(refused.value).startswith("the cluster has a pod default/db-1 already")


def write(tmp_path: Path, name: str, *objects: object) -> str:
    path = tmp_path / name
    path.write_text(manifest(*objects))
    return str(path)


@pytest.fixture
def mix_files(tmp_path: Path) -> list[str]:
    """A one-node cluster of 8 cpu, a 1-cpu web and a 2-cpu db: as cpu-partial-unit."""
    return [
        write(tmp_path, "cluster.yaml", node("n1", cpu="8")),
        write(tmp_path, "web.yaml", cpu_pod("web")),
        write(tmp_path, "db.yaml", cpu_pod("db", "2")),
    ]


def test_table(mix_files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, web, db = mix_files
    assert main(["capacity", cluster, "--pod", web, "--pod", db, "--ratio", "3:1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "The cluster can schedule 1 unit(s) of 3 web + 1 db.",
        "That is 3 instance(s) of the pod web and 1 of the pod db.",
        "",
    ]
    assert lines[3].startswith(
        "Termination reason: FailedScheduling: 0/1 nodes are available: 1 Insufficient cpu."
    )
    assert lines[4:] == [
        "Not counted: 3 instance(s) of the pod web, placed by the unit that did not fit.",
        "",
        "Pod distribution among nodes:",
        "web:",
        "\t- n1: 3 instance(s)",
        "db:",
        "\t- n1: 1 instance(s)",
    ]


def test_json_report_fields(mix_files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, web, db = mix_files
    argv = ["capacity", cluster, "--pod", web, "--pod", db, "--ratio", "3:1", "-o", "json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert datetime.strptime(report.pop("timestamp"), "%Y-%m-%dT%H:%M:%SZ")
    fail = report.pop("failReason")
    assert (fail["reason"], list(fail["nodeFailures"])) == ("FailedScheduling", ["n1"])

    def pod(name: str, cpu: str, instances: int) -> dict[str, object]:
        return {
            "namespace": "default",
            "name": name,
            "requests": {"cpu": cpu},
            "nodeSelector": {},
            "instances": instances,
            "instancesPerNode": {"n1": instances},
        }

    assert report == {
        "ratio": [3, 1],
        "maxLimit": 0,
        "units": 1,
        "pods": [pod("web", "1000m", 3), pod("db", "2000m", 1)],
        "partialUnit": {"web": 3},
    }


def test_one_pod_without_ratio_keeps_cluster_capacitys_report(
    mix_files: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, web, _ = mix_files
    assert main(["capacity", cluster, "--pod", web, "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["instances"], "units" in report, "pods" in report) == (8, False, False)
    assert main(["capacity", cluster, "--pod", web, "--ratio", "1", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["units"], report["ratio"], "instances" in report) == (8, [1], False)


WEB, DB, CACHE = cpu_pod("web"), cpu_pod("db"), cpu_pod("cache")
BAD_RATIO = {
    "several-pods-without-ratio": (
        (WEB, DB),
        (),
        "--ratio: required with several --pod files, one count per --pod (e.g. 3:1)",
    ),
    "two-counts-for-three-pods": (
        (WEB, DB, CACHE),
        ("--ratio", "3:1"),
        "--ratio 3:1: 2 count(s) for 3 --pod file(s); give one per --pod, in their order",
    ),
    "a-zero": ((WEB, DB), ("--ratio", "0:1"), "--ratio 0:1: '0' is not a positive whole number"),
    "not-a-number": (
        (WEB,),
        ("--ratio", "abc"),
        "--ratio abc: 'abc' is not a positive whole number",
    ),
    "an-empty-count": (
        (WEB, DB),
        ("--ratio", "3:"),
        "--ratio 3:: '' is not a positive whole number",
    ),
    "the-same-pod-twice": (
        (WEB, cpu_pod("web", "2")),
        ("--ratio", "3:1"),
        "{pod1}: the pod web is in {pod0} too; each --pod needs its own name",
    ),
    "a-pod-no-profile-schedules": (
        (WEB, make_pod("db", scheduler_name="other")),
        ("--ratio", "3:1"),
        "the pod db's schedulerName 'other' is no profile's (the configuration's: "
        "default-scheduler)",
    ),
}


@pytest.mark.parametrize("case", list(BAD_RATIO.values()), ids=list(BAD_RATIO))
def test_bad_input_is_one_line_and_exit_2(
    case: tuple[tuple[Pod, ...], tuple[str, ...], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pods, flags, line = case
    cluster = write(tmp_path, "cluster.yaml", node("n1"))
    files = [write(tmp_path, f"pod{i}.yaml", pod) for i, pod in enumerate(pods)]
    argv = ["capacity", cluster, *(w for f in files for w in ("--pod", f)), *flags]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    named = {f"pod{i}": f for i, f in enumerate(files)}
    assert captured.err.splitlines() == ["ksched capacity: " + line.format(**named)]


async def test_preemptions_of_whole_units_are_listed() -> None:
    # n1's 3 cpu run three priority-0 pods: the first unit's web and db (priority 100)
    # evict one each, the second unit's web the third; its db finds nothing to evict.
    low = [cpu_pod(f"low-{i}", node_name="n1", priority=0) for i in range(3)]
    documents = load_cluster(manifest(node("n1", cpu="3"), *low), "cluster.yaml")
    files = [(manifest(cpu_pod(name, priority=100)), f"{name}.yaml") for name in ("web", "db")]
    report = await capacity_mix(
        documents, load_parts(files, (1, 1)), allow_preemption=True, now=WHEN
    )
    assert (report.units, dict(report.partial_unit)) == (1, {"web": 1})
    # Only the whole unit's: web-1 evicted too, but its unit is not counted.
    got = [(p.pod, p.node, len(p.victims)) for p in report.preemptions or ()]
    assert got == [("default/web-0", "n1", 1), ("default/db-0", "n1", 1)]
