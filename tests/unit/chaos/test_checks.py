"""The chaos run's verdicts: a clean run passes every check, and each kind of damage
fails exactly the check that names it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.checks import Observed, evaluate, table
from tests.chaos.observe import read_log
from tests.chaos.workload import REQUESTS, node_size, scheduling_basic

NODE = {"cpu": 300, "memory": 1500, "pods": 3}
"""Room for three pods of REQUESTS each."""
PLACED = {"ns/a": "n1", "ns/b": "n1", "ns/c": "n2", "ns/d": "n2"}


def clean(**changes: Any) -> Observed:
    """Four pods bound two per node, everything delivered, recorded once, settled."""
    placed = dict(PLACED)
    objects = {("node", "n1"): {"x": 1}, ("pod", "a"): {"y": 2}}
    observed = Observed(
        pods=sorted(placed),
        decisions={pod: [node] for pod, node in placed.items()},
        placed=placed,
        log_bindings=dict.fromkeys(placed, 1),
        log_repeats=[],
        requests=REQUESTS,
        allocatable={"n1": NODE, "n2": NODE},
        reservations=[],
        leases=[],
        waiting=[],
        log_objects=objects,
        store_objects=dict(objects),
        log_seq=10,
        store_seq=10,
    )
    return dataclasses.replace(observed, **changes)


def failing(observed: Observed) -> dict[str, str]:
    return {row.name: row.value for row in evaluate(observed) if not row.ok}


def test_a_clean_run_passes_every_check() -> None:
    assert failing(clean()) == {}


@pytest.mark.parametrize(
    ("changes", "violated"),
    [
        pytest.param(
            {"placed": {k: v for k, v in PLACED.items() if k != "ns/d"}},
            {"pods lost (never bound)": "1"},
            id="a pod never bound",
        ),
        pytest.param(
            {"decisions": {k: [v] for k, v in PLACED.items() if k != "ns/a"}},
            {"Bindings not delivered to the client": "1"},
            id="a Binding the client never received",
        ),
        pytest.param(
            {"log_bindings": {**dict.fromkeys(PLACED, 1), "ns/b": 2}},
            {"pods bound twice (log)": "1"},
            id="a binding recorded twice",
        ),
        pytest.param(
            {"log_repeats": ["pod uid-a @7"]},
            {"duplicate events recorded (log)": "1"},
            id="a duplicate recorded",
        ),
        pytest.param(
            {"violations": ["ns/a on n1: NodePorts: node(s) didn't have free ports"]},
            {"hard constraints broken (final state)": "1"},
            id="a hard constraint broken",
        ),
        pytest.param(
            {"decisions": {**{k: [v] for k, v in PLACED.items()}, "ns/a": ["n1", "n2"]}},
            {"pods bound to two nodes": "1"},
            id="Bindings to two nodes",
        ),
        pytest.param(
            {"decisions": {**{k: [v] for k, v in PLACED.items()}, "ns/a": ["n2"]}},
            {"pods bound to two nodes": "1"},
            id="a Binding that disagrees with the store",
        ),
        pytest.param(
            {
                "placed": dict.fromkeys(PLACED, "n1"),
                "decisions": {pod: ["n1"] for pod in PLACED},
            },
            {"nodes over allocatable": "1"},
            id="four pods on a node with room for three",
        ),
        pytest.param(
            {"allocatable": {"n1": {**NODE, "memory": 999}, "n2": NODE}},
            {"nodes over allocatable": "1"},
            id="memory over allocatable alone",
        ),
        pytest.param(
            {"reservations": ["uid-a"]},
            {"reservations left behind": "1"},
            id="a reservation left",
        ),
        pytest.param({"leases": ["uid-a", "uid-b"]}, {"leases left behind": "2"}, id="leases"),
        pytest.param({"waiting": ["uid-c"]}, {"waiting pods left behind": "1"}, id="a waiting pod"),
        pytest.param(
            {"store_objects": {("node", "n1"): {"x": 1}}},
            {"log and store disagree (objects)": "1"},
            id="an object missing from the store",
        ),
        pytest.param(
            {"store_objects": {("node", "n1"): {"x": 1}, ("pod", "a"): {"y": 3}}},
            {"log and store disagree (objects)": "1"},
            id="an object that differs",
        ),
        pytest.param(
            {"store_seq": 9},
            {"log seq = store applied seq": "10 / 9"},
            id="the store behind the log",
        ),
        pytest.param(
            {"crashed": ["scheduler"]},
            {"services exited on their own": "1"},
            id="a crash",
        ),
    ],
)
def test_each_violation_fails_its_own_check(
    changes: dict[str, Any], violated: dict[str, str]
) -> None:
    assert failing(clean(**changes)) == violated


def test_a_repeated_binding_to_the_same_node_is_no_violation() -> None:
    """Binding is at least once; the log records it once."""
    assert (
        failing(clean(decisions={**{k: [v] for k, v in PLACED.items()}, "ns/a": ["n1"] * 2})) == {}
    )


def test_the_table_names_each_violation_and_its_offenders() -> None:
    text = table(evaluate(clean(leases=["uid-a"])), [("seed", "1")])
    assert "seed" in text
    [line] = [line for line in text.splitlines() if line.startswith("leases left behind")]
    assert "VIOLATION" in line and "uid-a" in line
    assert "pods lost (never bound)" in text and text.count("VIOLATION") == 1


@pytest.mark.parametrize(("pods", "nodes"), [(10_000, 50), (2000, 20), (7, 3), (1, 1)])
def test_every_pod_of_the_workload_fits(pods: int, nodes: int) -> None:
    size = node_size(pods, nodes)
    per_node = -(-pods // nodes)
    assert all(per_node * REQUESTS[r] <= size[r] for r in REQUESTS)
    workload = scheduling_basic(pods, nodes)
    assert len(workload.pods) == pods and len(workload.nodes) == nodes
    assert len({p["metadata"]["uid"] for p in workload.pods}) == pods


def test_the_log_is_folded_by_kind_and_uid(tmp_path: Path) -> None:
    node = {"metadata": {"name": "n1", "uid": "u-n1"}}
    pod = {"metadata": {"name": "a", "namespace": "ns", "uid": "u-a"}, "spec": {}}
    bound = {**pod, "spec": {"nodeName": "n1"}}
    gone = {"metadata": {"name": "b", "namespace": "ns", "uid": "u-b"}}
    entries = [
        {"seq": 1, "kind": "node", "type": "ADDED", "object": node},
        {"seq": 2, "kind": "pod", "type": "ADDED", "object": pod},
        {"seq": 3, "kind": "pod", "type": "ADDED", "object": pod},
        {"seq": 4, "kind": "pod", "type": "MODIFIED", "object": bound, "origin": "binding"},
        {"seq": 5, "kind": "pod", "type": "ADDED", "object": gone},
        {"seq": 6, "kind": "pod", "type": "DELETED", "object": gone},
    ]
    path = tmp_path / "events.jsonl"
    lines = [json.dumps(entry) for entry in entries]
    path.write_text("\n".join(lines) + '\n{"seq": 7, "kind": "po')  # a torn last line
    contents = read_log(path)
    assert contents.seq == 6
    assert contents.objects == {("node", "u-n1"): node, ("pod", "u-a"): bound}
    assert contents.bindings == {"ns/a": 1}
    assert contents.repeats == ["pod u-a @3"]
