"""simulate always ends: the two runs seen to go on for ever, driven to their end with
the FakeClock (simulate's own) under a bounded wait, in both output modes; and the
rule that decides when a pod is no longer waited for (cli.progress)."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.cli.embedded import DecisionRecord
from services.cli.progress import Progress
from services.cli.simulate import load_cluster, print_table, simulate
from services.framework.api.diagnosis import NO_NODES_AVAILABLE
from services.framework.api.types import PodInfo
from services.framework.config import load_config
from services.queue.types import QueueEntry, SubQueue
from tests.builders import make_pod

NO_NODES = "kind: Pod\nmetadata: {name: lonely, namespace: demo}\nspec: {containers: [{name: c}]}\n"
TOO_BIG = (
    "kind: Node\nmetadata: {name: node1}\nstatus: {allocatable: {cpu: '1', pods: '10'}}\n---\n"
    "kind: Pod\nmetadata: {name: big, namespace: demo}\n"
    "spec: {containers: [{name: c, resources: {requests: {cpu: '2'}}}]}\n"
)
# Upstream's score-only test profiles: NodeResourcesFit scores but does not filter.
SCORE_ONLY = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"filter": {"disabled": [{"name": "NodeResourcesFit"}]}},
        }
    ],
}
SEEN = [
    pytest.param(
        NO_NODES,
        None,
        [("FailedScheduling", "demo/lonely", None, NO_NODES_AVAILABLE, 1)],
        id="pending-pod-no-nodes",
    ),
    pytest.param(
        TOO_BIG,
        SCORE_ONLY,
        [("Binding", "demo/big", "node1", None, 1)],
        id="fit-filter-disabled",
    ),
]
BOUND = 20.0
"""Seconds any of these runs may take (each ends in well under one)."""


def outcome(records: list[DecisionRecord]) -> list[tuple[Any, ...]]:
    return [(r.kind, r.pod, r.node, r.message, r.attempts) for r in records]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("text", "config", "expected"), SEEN)
async def test_simulate_ends_on_each_seen_case(
    text: str, config: dict[str, Any] | None, expected: list[tuple[Any, ...]]
) -> None:
    profiles = load_config(config).profiles if config else None
    documents = load_cluster(text, "cluster.yaml")
    records = await asyncio.wait_for(simulate(documents, seed=0, profiles=profiles), BOUND)
    assert outcome(records) == expected


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("text", "config", "expected"), SEEN)
@pytest.mark.parametrize("output", ["json", "table"])
def test_the_command_ends_and_prints_each_remaining_pod_once(
    tmp_path: Path,
    text: str,
    config: dict[str, Any] | None,
    expected: list[tuple[Any, ...]],
    output: str,
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text)
    command = [sys.executable, "-m", "services.cli.main", "simulate", str(cluster)]
    if config:
        (tmp_path / "config.json").write_text(json.dumps(config))
        command += ["--config", str(tmp_path / "config.json")]
    done = subprocess.run(
        [*command, "--output", output], capture_output=True, text=True, timeout=BOUND * 3
    )
    assert done.returncode == 0, done.stderr
    [(kind, pod, node, message, attempts)] = expected
    if output == "json":
        assert [json.loads(line) for line in done.stdout.splitlines()] == [
            {"kind": kind, "pod": pod, **({"node": node} if node else {}), "attempts": attempts}
            | ({"message": message} if message else {})
        ]
    else:
        rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
        assert rows[1][:2] == [kind, pod] and rows[1][-1] == str(attempts)
        bound = 1 if kind == "Binding" else 0
        assert done.stdout.endswith(f"\n{bound} bound, {1 - bound} failed scheduling\n")


def test_the_table_shows_each_pod_once_with_its_last_decision() -> None:
    records = [
        DecisionRecord("FailedScheduling", "demo/a", 1, message="0/1 nodes: first"),
        DecisionRecord("FailedScheduling", "demo/b", 1, message="0/1 nodes: b"),
        DecisionRecord("FailedScheduling", "demo/a", 2, message="0/1 nodes: second"),
        DecisionRecord("Binding", "demo/c", 1, node="n1"),
    ]
    out = io.StringIO()
    print_table(records, out)
    lines = out.getvalue().splitlines()
    assert [line.split()[:2] for line in lines[1:4]] == [
        ["FailedScheduling", "demo/b"],
        ["FailedScheduling", "demo/a"],
        ["Binding", "demo/c"],
    ]
    assert "second" in lines[2] and lines[2].endswith("  2")
    assert lines[-1] == "1 bound, 2 failed scheduling"


def queued(where: SubQueue, attempts: int, message: str) -> QueueEntry:
    pod = PodInfo.of(make_pod("p"))
    return QueueEntry(pod, 0.0, attempts=attempts, uid="p", where=where, message=message)


@pytest.mark.parametrize(
    ("history", "where", "expected"),
    [
        # (attempts, message, cluster seq) at each quiet point
        ([(1, "no", 5)], SubQueue.BACKOFF, True),  # no quiet point before: may have changed
        ([(0, "", 5), (1, "no", 5)], SubQueue.BACKOFF, False),
        ([(0, "", 5), (1, "no", 6)], SubQueue.BACKOFF, True),  # a binding during its attempt
        ([(0, "", 5), (1, "no", 5), (1, "no", 7)], SubQueue.BACKOFF, True),  # one after it
        ([(0, "", 5), (1, "no", 6), (2, "no", 6)], SubQueue.BACKOFF, False),
        ([(1, "no", 5), (2, "no", 6), (3, "no", 7), (4, "no", 8)], SubQueue.BACKOFF, True),
        ([(i, "no", i) for i in range(1, 5)], SubQueue.BACKOFF, True),  # 4 in a row so far
        ([(i, "no", i) for i in range(1, 6)], SubQueue.BACKOFF, False),  # 5 in a row: bound
        ([(i, f"no {i % 2}", i) for i in range(1, 9)], SubQueue.BACKOFF, True),
        ([(1, "no", 5), (1, "no", 9)], SubQueue.UNSCHEDULABLE, False),  # parked: hints said no
        ([(1, "no", 5)], SubQueue.ACTIVE, True),
        ([(1, "no", 5)], SubQueue.IN_FLIGHT, True),
    ],
    ids=[
        "first-quiet-point",
        "unchanged-since-dispatch",
        "changed-during-attempt",
        "changed-after-attempt",
        "retried-after-change-unchanged-since",
        "each-retry-after-a-change",
        "four-same-failures",
        "five-same-failures",
        "failures-differ",
        "parked",
        "active",
        "in-flight",
    ],
)
def test_a_pod_is_waited_for_only_while_a_change_may_help_it(
    history: list[tuple[int, str, int]], where: SubQueue, expected: bool
) -> None:
    progress = Progress(max_same_failures=5)
    for attempts, message, seq in history:
        progress.quiet([queued(SubQueue.BACKOFF, attempts, message)], seq)
    assert progress.may_progress(queued(where, history[-1][0], history[-1][1])) is expected
