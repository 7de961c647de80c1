"""--explain: simulate's JSON and tables, the pod annotation through the embedded
pipeline, and watch's rendering of an explained decision."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from contracts.k8s import ObjectMeta
from services.cli import explain_table
from services.cli.main import main
from services.cli.runtime import _print_explanation
from services.cli.simulate import load_cluster, simulate
from services.common.decisions import EXPLAIN_ANNOTATION, binding_for, with_explanation
from tests.builders import make_pod

CLUSTER = """\
kind: Node
metadata: {name: a}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
kind: Node
metadata: {name: b}
status: {allocatable: {cpu: "1", memory: 8Gi, pods: "110"}}
---
kind: Node
metadata: {name: c}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
kind: Pod
metadata: {name: web, namespace: demo}
spec: {containers: [{name: c, resources: {requests: {cpu: "2", memory: 1Gi}}}]}
---
kind: Pod
metadata: {name: huge, namespace: demo}
spec: {containers: [{name: c, resources: {requests: {cpu: "20"}}}]}
"""
WEIGHT_3 = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    multiPoint:
      enabled: [{name: NodeResourcesFit, weight: 3}]
"""
INSUFFICIENT_CPU = {
    "plugin": "NodeResourcesFit",
    "status": "Unschedulable",
    "reasons": ["Insufficient cpu"],
}


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    (tmp_path / "config.yaml").write_text(WEIGHT_3)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_simulate_explain_json(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = str(cluster.parent / "config.yaml")
    out = run(capsys, "simulate", str(cluster), "--config", config, "--explain", "--output", "json")
    decisions = {d["pod"]: d for d in map(json.loads, out.splitlines())}
    web = decisions["demo/web"]["explain"]
    assert (web["evaluatedNodes"], web["feasibleNodes"]) == (3, 2)
    assert "NodeResourcesFit" in web["filterPlugins"]
    assert web["filter"] == {"a": "passed", "b": INSUFFICIENT_CPU, "c": "passed"}
    assert set(web["score"]) == {"a", "c"}
    # LeastAllocated, normalized then times the configured weight 3:
    # a: (cpu 50 + memory 87) / 2 = 68; c: (cpu 75 + memory 87) / 2 = 81.
    assert web["score"]["a"]["plugins"]["NodeResourcesFit"] == {"score": 68, "weighted": 204}
    assert web["score"]["c"]["plugins"]["NodeResourcesFit"] == {"score": 81, "weighted": 243}
    for entry in web["score"].values():
        assert entry["total"] == sum(p["weighted"] for p in entry["plugins"].values())
    chosen = decisions["demo/web"]["node"]
    assert web["score"][chosen]["total"] == max(e["total"] for e in web["score"].values())
    huge = decisions["demo/huge"]
    assert huge["kind"] == "FailedScheduling"
    assert huge["explain"]["filter"] == dict.fromkeys("abc", INSUFFICIENT_CPU)
    assert (huge["explain"]["feasibleNodes"], huge["explain"]["score"]) == (0, {})


def test_simulate_without_explain_has_none(
    cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(capsys, "simulate", str(cluster), "--output", "json")
    assert all("explain" not in json.loads(line) for line in out.splitlines())


def test_simulate_explain_table(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "simulate", str(cluster), "--explain", "--output", "table")
    assert "== Binding demo/web → " in out
    assert "== FailedScheduling demo/huge: 0/3 nodes are available" in out
    assert "Filter: 3 nodes evaluated, 2 feasible" in out
    assert "Score: normalized (weighted)" in out
    lines = out.splitlines()
    header = lines.index("Score: normalized (weighted)") + 1
    assert lines[header].split()[0] == "NODE" and lines[header].split()[-1] == "TOTAL"
    assert lines[header + 1].split()[1] == "*"  # the chosen node is ranked first
    assert "1 bound, 1 failed scheduling" in out


def test_filter_table_columns() -> None:
    rows = explain_table.filter_rows(
        ["NodeResourcesFit", "TaintToleration"],
        {
            "a": "passed",
            "b": INSUFFICIENT_CPU,
            "c": {"plugin": "TaintToleration", "status": "Unschedulable", "reasons": ["t"]},
            "d": {"plugin": "NodeAffinity", "status": "UnschedulableAndUnresolvable",
                  "reasons": ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]},
        },
    )  # fmt: skip
    assert rows == [
        ["NODE", "NodeResourcesFit", "TaintToleration", "NodeAffinity"],
        ["a", "passed", "passed", "passed"],
        ["b", "Insufficient cpu", "-", "-"],
        ["c", "passed", "t", "-"],
        ["d", "-", "-", "node(s) didn't satisfy plugin(s) [NodeAffinity]"],
    ]


def annotated(name: str, cpu: str, explain: bool) -> str:
    annotations = f'annotations: {{"{EXPLAIN_ANNOTATION}": "true"}}' if explain else ""
    return (
        f"kind: Pod\nmetadata: {{name: {name}, namespace: demo, {annotations}}}\n"
        f"spec: {{containers: [{{name: c, resources: {{requests: {{cpu: '{cpu}'}}}}}}]}}\n"
    )


async def test_the_pod_annotation_asks_for_an_explanation() -> None:
    text = "---\n".join(
        [
            "kind: Node\nmetadata: {name: a}\nstatus: {allocatable: {cpu: '4', pods: '9'}}\n",
            "kind: Node\nmetadata: {name: b}\nstatus: {allocatable: {cpu: '2', pods: '9'}}\n",
            annotated("asked", "1", explain=True),
            annotated("quiet", "1", explain=False),
            annotated("too-big", "16", explain=True),
        ]
    )
    records = {r.pod: r for r in await simulate(load_cluster(text, "x.yaml"), seed=0)}
    asked = records["demo/asked"].explain
    assert asked is not None and asked["filter"] == {"a": "passed", "b": "passed"}
    assert records["demo/asked"].node in asked["score"]
    assert records["demo/quiet"].explain is None
    failed = records["demo/too-big"]
    assert failed.kind == "FailedScheduling" and failed.explain is not None
    assert failed.explain["filter"]["a"] == INSUFFICIENT_CPU


def test_the_binding_carries_the_explanation_of_its_pod() -> None:
    pod = make_pod("p", node_name=None)
    assert binding_for(pod, "n1").metadata.annotations == {}
    asked = with_explanation(pod, "true")
    assert binding_for(asked, "n1").metadata.annotations == {}  # a request, not an answer
    explained = with_explanation(pod, '{"filter": {}}')
    assert binding_for(explained, "n1").metadata.annotations == {
        EXPLAIN_ANNOTATION: '{"filter": {}}'
    }
    assert pod.metadata == ObjectMeta(name="p", namespace="default", uid="default-p-uid")


def test_watch_prints_the_explanation(capsys: pytest.CaptureFixture[str]) -> None:
    explanation: dict[str, Any] = {
        "evaluatedNodes": 2,
        "feasibleNodes": 2,
        "filterPlugins": ["NodeResourcesFit"],
        "filter": {"a": "passed", "b": "passed"},
        "score": {
            "a": {"plugins": {"NodeResourcesFit": {"score": 50, "weighted": 50}}, "total": 50},
            "b": {"plugins": {"NodeResourcesFit": {"score": 70, "weighted": 70}}, "total": 70},
        },
    }
    binding = {
        "kind": "Binding",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "annotations": {EXPLAIN_ANNOTATION: json.dumps(explanation)},
        },
        "target": {"kind": "Node", "name": "b"},
    }
    _print_explanation(binding)
    out = capsys.readouterr().out
    assert "Filter: 2 nodes evaluated, 2 feasible" in out
    assert "b *   70 (70)           70" in out
    _print_explanation({"kind": "Binding", "metadata": {"name": "q"}})
    assert capsys.readouterr().out == ""
    buffer = io.StringIO()
    explain_table.render({**explanation, "score": {}, "feasibleNodes": 1}, buffer)
    assert "not scored" in buffer.getvalue()


def test_the_explain_flag_reaches_the_scheduler_settings() -> None:
    from services.cli.main import _settings, _settings_argv, parser

    run_args = parser().parse_args(["run", "scheduler", "--explain"])
    assert _settings(run_args).scheduler.explain is True
    assert _settings(parser().parse_args(["run", "scheduler"])).scheduler.explain is False
    up_args = parser().parse_args(["up", "--explain", "--seed", "3"])
    assert _settings_argv(up_args) == ["--seed", "3", "--explain"]
