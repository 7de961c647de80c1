"""``ksched compare``: a profile against itself, LeastAllocated against MostAllocated on
a cluster where the difference is known, figures worked out by hand, FailedScheduling
by plugin, the outputs, and bad input."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.compare import Comparison, compare
from services.cli.main import main
from services.cli.simulate import load_cluster
from services.framework.config import load_config
from tests.builders import manifest
from tests.unit.cli.compare_support import node, pod, scoring, write, write_cluster

GI = 1 << 30
ROOT = Path(__file__).resolve().parents[3]
LEAST_CONFIG = scoring("LeastAllocated")


async def run(objects: tuple[object, ...], a: str, b: str, tmp_path: Path) -> Comparison:
    """``compare`` of the cluster ``objects`` under the configuration texts ``a``, ``b``."""
    documents = load_cluster(manifest(*objects), "cluster.yaml")
    configs = []
    for name, text in (("a.yaml", a), ("b.yaml", b)):
        path = write(tmp_path, name, text)
        configs.append((path, load_config(path).profiles))
    return await compare(documents, configs, seed=0)


def same_except_config_and_time(a: dict[str, Any], b: dict[str, Any]) -> bool:
    ignored = ("config", "wallSeconds")
    return {k: v for k, v in a.items() if k not in ignored} == {
        k: v for k, v in b.items() if k not in ignored
    }


# n1 runs db (2 cpu, 4Gi); n2 is empty. web (1 cpu, 2Gi) goes to the emptier node under
# LeastAllocated and to the fuller one under MostAllocated; BalancedAllocation scores
# both nodes alike (cpu and memory equally used on each), so NodeResourcesFit decides.
BIN_PACKING = (
    node("n1"),
    node("n2"),
    pod("db", "2", "4Gi", node_name="n1"),
    pod("web", "1", "2Gi"),
)


@dataclass(frozen=True)
class Expected:
    web: str
    utilization: dict[str, float]
    """Node → cpu utilization, which is also its memory utilization here."""
    spread: dict[str, float]
    free: dict[str, dict[str, Any]]


LEAST = Expected(
    web="n2",
    # n1: 2/4 cpu, 4/8Gi; n2: 1/4, 2/8Gi. Mean 0.375, deviations ±0.125.
    utilization={"n1": 0.5, "n2": 0.25},
    spread={"mean": 0.375, "stddev": 0.125, "imbalance": 0.25},
    free={"cpu": {"node": "n2", "amount": 3000}, "memory": {"node": "n2", "amount": 6 * GI}},
)
MOST = Expected(
    web="n1",
    # n1: 3/4 cpu, 6/8Gi; n2: nothing. Mean 0.375, deviations ±0.375.
    utilization={"n1": 0.75, "n2": 0.0},
    spread={"mean": 0.375, "stddev": 0.375, "imbalance": 0.75},
    free={"cpu": {"node": "n2", "amount": 4000}, "memory": {"node": "n2", "amount": 8 * GI}},
)


def check_run(run: dict[str, Any], expected: Expected) -> None:
    assert (run["bound"], run["pending"], run["evicted"]) == (1, 0, 0)
    for entry in run["nodes"]:
        for resource in ("cpu", "memory"):
            assert entry[resource]["utilization"] == expected.utilization[entry["name"]]
    assert [n["name"] for n in run["nodes"]] == ["n1", "n2"]
    assert run["utilization"] == {"cpu": expected.spread, "memory": expected.spread}
    assert run["largestFree"] == expected.free
    assert run["failedScheduling"] == {}
    assert run["wallSeconds"] >= 0


@pytest.mark.parametrize(
    ("a", "b", "expected_a", "expected_b"),
    [
        ("LeastAllocated", "MostAllocated", LEAST, MOST),
        ("MostAllocated", "LeastAllocated", MOST, LEAST),
    ],
    ids=["least-vs-most", "most-vs-least"],
)
async def test_least_against_most_allocated_worked_out_by_hand(
    a: str, b: str, expected_a: Expected, expected_b: Expected, tmp_path: Path
) -> None:
    comparison = await run(BIN_PACKING, scoring(a), scoring(b), tmp_path)
    report = comparison.to_json()
    assert report["placedDifferently"] == [
        {"pod": "default/web", "a": expected_a.web, "b": expected_b.web}
    ]
    check_run(report["a"], expected_a)
    check_run(report["b"], expected_b)
    assert report["a"]["nodes"][0]["cpu"] == {
        "requested": 2000 + (1000 if expected_a.web == "n1" else 0),
        "allocatable": 4000,
        "utilization": expected_a.utilization["n1"],
    }


SELF_CLUSTERS = {
    "bin-packing": BIN_PACKING,
    "several-pods-some-pending": (
        node("n1"),
        node("n2", cpu="2", memory="4Gi"),
        pod("db", "1", "1Gi", node_name="n2"),
        *(pod(f"web-{i}", "1", "1Gi") for i in range(6)),
    ),
}


@pytest.mark.parametrize("objects", list(SELF_CLUSTERS.values()), ids=list(SELF_CLUSTERS))
async def test_a_profile_against_itself_shows_no_difference(
    objects: tuple[object, ...], tmp_path: Path
) -> None:
    config = scoring("MostAllocated")
    comparison = await run(objects, config, config, tmp_path)
    report = comparison.to_json()
    assert report["placedDifferently"] == []
    assert report["a"]["config"] != report["b"]["config"]
    assert same_except_config_and_time(report["a"], report["b"])
    assert report["a"]["bound"] >= 1  # the runs did schedule something


async def test_several_pods_some_pending_are_counted(tmp_path: Path) -> None:
    comparison = await run(
        SELF_CLUSTERS["several-pods-some-pending"], LEAST_CONFIG, LEAST_CONFIG, tmp_path
    )
    # n1: 4 cpu for four, n2: 1 cpu left for one; the sixth fits nowhere.
    assert (comparison.a.bound, comparison.a.pending, comparison.a.evicted) == (5, 1, 0)
    rejected = comparison.to_json()["a"]["failedScheduling"]
    assert rejected == {
        "NodeResourcesFit": {"pods": 1, "nodes": 2, "reasons": {"Insufficient cpu": 2}}
    }


async def test_largest_free_amount_worked_out_by_hand(tmp_path: Path) -> None:
    cluster = (
        node("n1", cpu="4", memory="8Gi"),
        node("n2", cpu="2", memory="16Gi"),
        pod("a", "1500m", "2Gi", node_name="n1"),
        pod("b", "500m", "2Gi", node_name="n2"),
    )
    comparison = await run(cluster, LEAST_CONFIG, scoring("MostAllocated"), tmp_path)
    # Free: n1 2500m and 6Gi, n2 1500m and 14Gi.
    for side in (comparison.a, comparison.b):
        assert side.largest_free("cpu") == ("n1", 2500)
        assert side.largest_free("memory") == ("n2", 14 * GI)


async def test_failed_scheduling_reasons_by_plugin(tmp_path: Path) -> None:
    cluster = (
        node("n1"),
        node("n2", taints=[("dedicated", "gpu", "NoSchedule")]),
        node("n3", cpu="1", pods=1),
        pod("agent", "100m", "64Mi", node_name="n3"),
        pod("giant", "8", "1Gi"),
        pod("gated", "1", "1Gi", scheduling_gates=["wait"]),
    )
    comparison = await run(cluster, LEAST_CONFIG, scoring("MostAllocated"), tmp_path)
    report = comparison.to_json()
    expected = {
        # n1: 4 cpu; n3: 1 cpu, and its one pod slot taken.
        "NodeResourcesFit": {
            "pods": 1,
            "nodes": 2,
            "reasons": {"Insufficient cpu": 2, "Too many pods": 1},
        },
        "SchedulingGates": {
            "pods": 1,
            "nodes": 0,
            "reasons": {"Scheduling is blocked due to non-empty scheduling gates": 1},
        },
        "TaintToleration": {
            "pods": 1,
            "nodes": 1,
            "reasons": {"node(s) had untolerated taint(s)": 1},
        },
    }
    for side in ("a", "b"):
        assert report[side]["failedScheduling"] == expected
        assert (report[side]["bound"], report[side]["pending"]) == (0, 2)


def test_json_and_table_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write_cluster(tmp_path, *BIN_PACKING)
    a = write(tmp_path, "least.yaml", scoring("LeastAllocated"))
    b = write(tmp_path, "most.yaml", scoring("MostAllocated"))
    assert main(["compare", cluster, "--config", a, "--config", b, "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report) == ["seed", "a", "b", "placedDifferently"]
    assert (report["seed"], report["a"]["config"], report["b"]["config"]) == (0, a, b)
    assert report["placedDifferently"] == [{"pod": "default/web", "a": "n2", "b": "n1"}]
    assert main(["compare", cluster, "--config", a, "--config", b]) == 0
    text = capsys.readouterr().out
    lines = [line.split() for line in text.splitlines()]
    assert ["cpu", "max-min", "25.0%", "75.0%"] in lines
    assert ["largest", "free", "memory", "6Gi", "(n2)", "8Gi", "(n2)"] in lines
    assert ["n1", "50.0%", "75.0%", "50.0%", "75.0%"] in lines
    assert text.endswith("1 pod(s) placed differently\nPOD          A   B\ndefault/web  n2  n1\n")


@pytest.mark.parametrize(
    ("cluster", "added"),
    [
        pytest.param(BIN_PACKING[:3], [BIN_PACKING[3:]], id="the pending pod added"),
        pytest.param(BIN_PACKING[2:3], [BIN_PACKING[:2], BIN_PACKING[3:]], id="nodes added"),
    ],
)
def test_add_puts_more_objects_in_the_cluster(
    cluster: tuple[object, ...],
    added: list[tuple[object, ...]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--add FILE`` (the next rollout on a snapshot): the same run as one file holding
    everything, whatever file a kind comes in."""
    a = write(tmp_path, "least.yaml", scoring("LeastAllocated"))
    b = write(tmp_path, "most.yaml", scoring("MostAllocated"))
    flags = ["--config", a, "--config", b, "-o", "json"]
    assert main(["compare", write_cluster(tmp_path, *BIN_PACKING, name="all.yaml"), *flags]) == 0
    whole = json.loads(capsys.readouterr().out)
    adds = [
        arg
        for i, objects in enumerate(added)
        for arg in ("--add", write_cluster(tmp_path, *objects, name=f"add{i}.yaml"))
    ]
    assert main(["compare", write_cluster(tmp_path, *cluster), *adds, *flags]) == 0
    split = json.loads(capsys.readouterr().out)
    assert split["placedDifferently"] == whole["placedDifferently"] != []
    for side in ("a", "b"):
        assert same_except_config_and_time(split[side], whole[side])


def test_table_of_a_profile_against_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write_cluster(tmp_path, *BIN_PACKING)
    a = write(tmp_path, "a.yaml", scoring("LeastAllocated"))
    b = write(tmp_path, "b.yaml", scoring("LeastAllocated"))
    assert main(["compare", cluster, "--config", a, "--config", b]) == 0
    text = capsys.readouterr().out
    assert text.endswith(
        "FailedScheduling by plugin (pods left pending)\nnone\n\nno pod placed differently\n"
    )


def test_the_bundled_examples_compare(capsys: pytest.CaptureFixture[str]) -> None:
    examples = ROOT / "ops" / "examples"
    argv = ["compare", str(examples / "cluster.yaml"), "-o", "json"]
    for config in ("scheduler-config.yaml", "binpack-config.yaml"):
        argv += ["--config", str(examples / config)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    # LeastAllocated puts batch-1 on the emptier small node, MostAllocated on medium.
    assert report["placedDifferently"] == [{"pod": "demo/batch-1", "a": "small", "b": "medium"}]


BAD_INPUT = {
    "same-config-twice": (
        ("{a}", "{a}"),
        "ksched compare: --config: the same file given twice ({a}); compare two configurations",
    ),
    "same-config-by-another-path": (
        ("{a}", "{dir}/sub/../a.yaml"),
        "ksched compare: --config: the same file given twice ({a}); compare two configurations",
    ),
    "one-config": (
        ("{a}",),
        "ksched compare: --config: give exactly two configurations (A, then B); got 1",
    ),
    "three-configs": (
        ("{a}", "{b}", "{dir}/c.yaml"),
        "ksched compare: --config: give exactly two configurations (A, then B); got 3",
    ),
    "missing-config": (
        ("{a}", "{dir}/nope.yaml"),
        "ksched: {dir}/nope.yaml: cannot read the configuration: No such file or directory",
    ),
    "broken-yaml-config": (
        ("{a}", "{dir}/broken.yaml"),
        "ksched: {dir}/broken.yaml:4:1: not valid YAML: expected the node content, but "
        "found '<stream end>'",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUT.values()), ids=list(BAD_INPUT))
def test_bad_input_is_one_line_and_exit_2(
    case: tuple[tuple[str, ...], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs, line = case
    (tmp_path / "sub").mkdir()
    cluster = write_cluster(tmp_path, *BIN_PACKING)
    names = {"dir": str(tmp_path)}
    for name in ("a", "b", "c"):
        names[name] = write(tmp_path, f"{name}.yaml", scoring("LeastAllocated"))
    broken = yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1"}) + "profiles: [\n"
    write(tmp_path, "broken.yaml", "kind: KubeSchedulerConfiguration\n" + broken)
    flags = [word for c in configs for word in ("--config", c.format(**names))]
    assert main(["compare", cluster, *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [line.format(**names)]


async def test_a_preemption_victim_counts_as_evicted(tmp_path: Path) -> None:
    cluster = (
        node("n1", cpu="2"),
        pod("low", "2", "1Gi", node_name="n1", priority=0),
        pod("vip", "2", "1Gi", priority=100),
    )
    comparison = await run(cluster, LEAST_CONFIG, scoring("MostAllocated"), tmp_path)
    for side in (comparison.a, comparison.b):
        assert (side.bound, side.pending, side.evicted) == (1, 0, 1)
        assert side.placements == {"default/vip": "n1"}
        assert side.nodes[0].requested["cpu"] == 2000
    assert comparison.placed_differently == []
