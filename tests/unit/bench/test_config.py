"""The workload files: every one under ops/bench/workloads loads and is valid, and a broken
one, or a misspelt name, is one line naming the file and the field (exit 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from bench.config import WORKLOADS_DIR, WorkloadError, load_file, load_workloads
from contracts.k8s import Node, Pod
from contracts.kinds import KINDS
from services.cli.main import main

UPSTREAM_NAMES = {
    "SchedulingBasic",
    "SchedulingNodeAffinity",
    "TopologySpreading",
    "SchedulingPodAntiAffinity",
    "SchedulingPodAffinity",
    "Unschedulable",
    "PreemptionBasic",
    "PreemptionAsync",
    "SchedulingWithMixedChurn",
    "SchedulingDaemonset",
    "SchedulingWithResourceClaimTemplate",
    "SchedulingWithResourceClaim",
    "SteadyStateClusterResourceClaimTemplate_empty",
    "SteadyStateClusterResourceClaimTemplate_half",
    "SteadyStateClusterResourceClaimTemplate_full",
}
OWN_NAMES = {"GangScheduling", "GangSchedulingNative"}
"""ksched's own test cases (scheduler_perf has no PodGroups)."""


@pytest.mark.parametrize("path", sorted(WORKLOADS_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_every_workload_file_loads_and_its_objects_decode(path: Path) -> None:
    workloads = load_file(path)
    assert workloads
    for workload in workloads:
        init, measured = workload.counts(10)
        assert measured >= 1
        for node in workload.all_nodes(2):
            msgspec.convert(node, Node)
        if init:
            first = workload.node_name(0)
            assert msgspec.convert(workload.init(0, 10), Pod).spec.node_name == first
        pod = msgspec.convert(workload.measured(0), Pod)
        assert pod.spec.node_name is None
        assert f"{pod.metadata.namespace}/{pod.metadata.name}" == workload.measured_key(0)
        if workload.churn is not None:
            for j, template in enumerate(workload.churn.templates):
                msgspec.convert(workload.churn.object(j, 0), KINDS[template.kind])


def test_every_upstream_workload_is_there_once() -> None:
    assert set(load_workloads()) == UPSTREAM_NAMES | OWN_NAMES


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the workload files with ``old`` replaced by ``new`` in the config (and a
    template of a kind ksched does not ingest, templates/churn/configmap.yaml)."""
    directory = tmp_path / "workloads"
    shutil.copytree(WORKLOADS_DIR, directory)
    configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: cm-\n"
    (directory / "templates" / "churn" / "configmap.yaml").write_text(configmap)
    config = directory / "performance-config.yaml"
    text = config.read_text()
    assert old in text, old
    config.write_text(text.replace(old, new, 1))
    return directory


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("countParam: $initNodes", "countParm: $initNodes", "unknown field `countParm`"),
        ("countParam: $initPods", "countParam: $initPod", "workloadTemplate[1].countParam"),
        ("countParam: $initPods", "countParam: initPods", "workloadTemplate[1].countParam"),
        ("opcode: createNodes", "opcode: createNode", "`$[0].workloadTemplate[0].opcode`"),
        ("    collectMetrics: true\n", "", "workloadTemplate[2]: the last op is the measured"),
        ("labels: [performance]", "labels: []", "(SchedulingBasic).workloads"),
        ("initNodes: 5000", "initNodes: many", "(SchedulingBasic).workloads[0].params.initNodes"),
        (
            "defaultPodTemplatePath: templates/pod-default.yaml",
            "defaultPodTemplatePath: templates/pod-defualt.yaml",
            "(SchedulingBasic).defaultPodTemplatePath: cannot open",
        ),
        ("intervalMilliseconds: 200", "intervalMilliseconds: 0", "intervalMilliseconds"),
        ("- name: SchedulingBasic\n", "- name: SchedulingBasic\n  oops: [\n", "performance-config"),
        (
            "  - opcode: createPodGroups\n",
            "  - opcode: createPodGroups\n    podGroupTemplatePath: templates/nope.yaml\n",
            "(GangScheduling).workloadTemplate[2].podGroupTemplatePath: cannot open",
        ),
        (
            "schedulerConfigPath: config/coscheduling.yaml",
            "schedulerConfigPath: config/nope.yaml",
            "(GangScheduling).schedulerConfigPath: ",
        ),
        (
            "  - opcode: createPodGroups\n",
            "  - opcode: createPodGroups\n  - opcode: createPodGroups\n",
            "(GangScheduling).workloadTemplate[3]: at most one",
        ),
        (
            "    mode: recreate\n    number: 1\n",
            "    mode: recreate\n    number: 0\n",
            "(SchedulingWithMixedChurn).workloadTemplate[1].number: recreate mode needs",
        ),
        (
            "    mode: recreate\n",
            "    mode: replace\n",
            "`$[6].workloadTemplate[1].mode`",
        ),
        (
            "    count: 1\n    nodeTemplatePath: templates/node-with-name.yaml\n",
            "    count: 1\n    countParam: $initNodes\n"
            "    nodeTemplatePath: templates/node-with-name.yaml\n",
            "(SchedulingDaemonset).workloadTemplate: the createNodes ops come first, one with",
        ),
        (
            "    count: 1\n    nodeTemplatePath: templates/node-with-name.yaml\n",
            "    count: 2\n    nodeTemplatePath: templates/node-with-name.yaml\n",
            "node-with-name.yaml: metadata.generateName: required (a name prefix; or "
            "metadata.name, in a createNodes op of count 1; ",
        ),
        (
            "    - templates/churn/service-default.yaml\n",
            "    - templates/churn/configmap.yaml\n",
            "configmap.yaml: kind: 'ConfigMap' is not a kind ksched ingests",
        ),
    ],
)
def test_a_broken_file_names_the_file_and_the_field(
    tmp_path: Path, old: str, new: str, says: str
) -> None:
    directory = _broken(tmp_path, old, new)
    with pytest.raises(WorkloadError) as raised:
        load_workloads(directory)
    message = str(raised.value)
    assert "performance-config.yaml" in message
    assert says in message


def test_a_broken_template_names_the_template_and_the_field(tmp_path: Path) -> None:
    directory = _broken(tmp_path, "x", "x")
    template = directory / "templates" / "pod-with-pod-affinity.yaml"
    template.write_text(template.read_text().replace("maxSkew", "x").replace("generateName", "gn"))
    with pytest.raises(WorkloadError, match=r"pod-with-pod-affinity.yaml: metadata.generateName"):
        load_workloads(directory)


def test_a_misspelt_workload_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "SchedulingBsic", "--nodes", "5", "--mode", "cycle"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("ksched bench: ")
    assert "ops/bench/workloads" in line
    assert "name: no test case named 'SchedulingBsic'" in line
    assert "SchedulingBasic" in line


@pytest.mark.parametrize(
    ("file", "old", "new", "says"),
    [
        (
            "templates/podgroup-default.yaml",
            "minMember: 8",
            "minMember: 0",
            "podgroup-default.yaml: spec.minMember: at least 1",
        ),
        (
            "templates/podgroup-default.yaml",
            "minMember: 8",
            "minMember: eight",
            "podgroup-default.yaml: Expected `int`",
        ),
        (
            "config/coscheduling.yaml",
            "- name: Coscheduling\n    args:",
            "- name: Cosheduling\n    args:",
            "coscheduling.yaml",
        ),
    ],
)
def test_a_broken_gang_file_names_the_file_and_the_field(
    tmp_path: Path, file: str, old: str, new: str, says: str
) -> None:
    directory = _broken(tmp_path, "x", "x")
    target = directory / file
    text = target.read_text()
    assert old in text, old
    target.write_text(text.replace(old, new, 1))
    with pytest.raises(WorkloadError) as raised:
        load_workloads(directory)
    assert says in str(raised.value)


def test_the_daemonset_workload_follows_upstream() -> None:
    daemonset = load_workloads()["SchedulingDaemonset"]
    assert daemonset.counts(15000) == (0, 30000) and daemonset.counts(200) == (0, 400)
    assert daemonset.total_nodes(200) == 201
    nodes = daemonset.all_nodes(3)
    assert [n["metadata"]["name"] for n in nodes] == [
        "scheduler-perf-node", "node-0", "node-1", "node-2",
    ]  # fmt: skip
    assert nodes[0]["metadata"]["labels"]["kubernetes.io/hostname"] == "scheduler-perf-node"
    pod = msgspec.convert(daemonset.measured(0), Pod)
    assert pod.spec.affinity is not None and pod.spec.affinity.node_affinity is not None
    required = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert required is not None
    [term] = required.node_selector_terms
    [field] = term.match_fields or []
    assert (field.key, field.operator, field.values) == (
        "metadata.name", "In", ["scheduler-perf-node"],
    )  # fmt: skip
