"""simulate on the bundled example, replay of a recorded run, and bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.cli.manifests import ManifestError
from services.cli.replay import replay
from services.cli.simulate import load_cluster, simulate
from services.common.eventlog import open_event_log, read_all
from services.framework.config import load_config
from tests.unit.cli.support import EXAMPLE, EXPECTED_BINDINGS, EXPECTED_FAILURE


async def test_simulate_places_the_bundled_example_as_worked_out() -> None:
    documents = load_cluster(EXAMPLE.read_text(), str(EXAMPLE))
    records = await simulate(documents, seed=0)
    bindings = {r.pod: r.node for r in records if r.kind == "Binding"}
    failures = {r.pod: r.message for r in records if r.kind == "FailedScheduling"}
    assert bindings == EXPECTED_BINDINGS
    assert failures == {"demo/giant": EXPECTED_FAILURE}
    assert all(r.attempts == 1 for r in records)


async def test_queue_order_decides_priority_first() -> None:
    documents = load_cluster(EXAMPLE.read_text(), str(EXAMPLE))
    records = await simulate(documents, seed=0)
    order = [r.pod for r in records if r.kind == "Binding"]
    assert order[0] == "demo/critical"
    assert order.index("demo/batch-1") < order.index("demo/batch-2")


async def test_replay_of_a_recorded_run_gives_the_same_decisions(tmp_path: Path) -> None:
    documents = load_cluster(EXAMPLE.read_text(), str(EXAMPLE))
    log_path = tmp_path / "events.jsonl"
    original = await simulate(documents, seed=0, event_log=open_event_log(str(log_path)))
    result = await replay(await read_all(open_event_log(str(log_path))), seed=0)
    assert result.recorded == EXPECTED_BINDINGS
    assert result.mismatches == []
    assert [(r.kind, r.pod, r.node, r.message) for r in result.decisions] == [
        (r.kind, r.pod, r.node, r.message) for r in original
    ]


def test_replay_reports_a_decision_that_differs(tmp_path: Path) -> None:
    from services.cli.embedded import DecisionRecord
    from services.cli.replay import ReplayResult

    result = ReplayResult(
        [DecisionRecord("Binding", "demo/a", 1, node="n2")], recorded={"demo/a": "n1"}
    )
    assert result.mismatches == ["demo/a: recorded n1, replayed n2"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: "
            "{requests: {cpu: 12x}}}]}\n",
            "document 1 (pod default/p): field spec.containers[0].resources.requests.cpu",
        ),
        (
            "kind: Node\nmetadata: {name: n}\n---\nmetadata: {name: d}\n",
            "document 2: field kind: is required",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {priority: high}\n",
            "document 1 (pod default/p): field spec.priority",
        ),
        ("kind: Pod\nmetadata: [unclosed\n", "not valid YAML"),
    ],
    ids=["bad-quantity", "missing-kind", "wrong-type", "broken-yaml"],
)
def test_a_bad_file_names_the_document_and_field(text: str, words: str) -> None:
    with pytest.raises(ManifestError) as error:
        load_cluster(text, "cluster.yaml")
    assert words in str(error.value)


def test_the_simulate_command_prints_json_lines_and_fails_on_a_bad_file(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "services.cli.main", "simulate"]
    done = subprocess.run(
        [*command, str(EXAMPLE), "--output", "json"], capture_output=True, text=True, check=True
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {(d["pod"], d.get("node")) for d in lines if d["kind"] == "Binding"} == set(
        EXPECTED_BINDINGS.items()
    )
    assert all(set(d) >= {"kind", "pod", "attempts"} for d in lines)
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\nmetadata: {name: p}\nspec: {overhead: {cpu: -1}}\n")
    failed = subprocess.run([*command, str(bad)], capture_output=True, text=True)
    assert failed.returncode == 2
    assert "spec.overhead.cpu" in failed.stderr


async def test_pods_of_every_configured_profile_are_scheduled_and_others_left_alone() -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "batch"}],
    }
    text = (
        "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', pods: '10'}}\n---\n"
        "kind: Pod\nmetadata: {name: a, namespace: x}\nspec: {schedulerName: batch}\n---\n"
        "kind: Pod\nmetadata: {name: b, namespace: x}\nspec: {schedulerName: someone-else}\n"
    )
    profiles = load_config(config).profiles
    records = await simulate(load_cluster(text, "x.yaml"), seed=0, profiles=profiles)
    assert [(r.kind, r.pod, r.node) for r in records] == [("Binding", "x/a", "n1")]
