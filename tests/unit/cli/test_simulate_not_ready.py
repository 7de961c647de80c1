"""simulate reports the pods it ends with held back at PreEnqueue (KEP-5501's
``NotReadyForScheduling``), with their plugin and message, in json and in the table."""

from __future__ import annotations

import io
import json
from pathlib import Path

from services.cli.embedded import DecisionRecord
from services.cli.replay import replay
from services.cli.simulate import load_cluster, print_json, print_table, simulate
from services.common.eventlog import open_event_log, read_all
from services.framework.config import load_config

CLUSTER = """\
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: '1', pods: '10'}}
---
kind: Pod
metadata: {name: gated, namespace: demo}
spec:
  schedulingGates: [{name: example.com/quota}]
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
---
kind: Pod
metadata: {name: free, namespace: demo}
spec:
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
---
kind: Pod
metadata: {name: giant, namespace: demo}
spec:
  containers: [{name: c, resources: {requests: {cpu: '8'}}}]
---
kind: Pod
metadata: {name: waits, namespace: demo, labels: {approval: required}}
spec:
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"""
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"permit": {"enabled": [{"name": "ExternalPermit"}]}},
            "pluginConfig": [
                {
                    "name": "ExternalPermit",
                    "args": {
                        "timeoutSeconds": 30,
                        "selector": {"matchLabels": {"approval": "required"}},
                    },
                }
            ],
        }
    ],
}
GATES = "Scheduling is blocked due to non-empty scheduling gates"


async def test_a_pod_held_back_to_the_end_is_reported_once_with_its_plugin() -> None:
    streamed: list[DecisionRecord] = []
    records = await simulate(
        load_cluster(CLUSTER, "c.yaml"),
        seed=0,
        profiles=load_config(CONFIG).profiles,
        on_decision=streamed.append,
    )
    assert streamed == records
    held = [r for r in records if r.kind == "NotReadyForScheduling"]
    assert [r.to_json() for r in held] == [
        {
            "kind": "NotReadyForScheduling",
            "pod": "demo/gated",
            "plugin": "SchedulingGates",
            "message": GATES,
        }
    ]
    assert records[-1] is held[0]  # after every decision of the run
    # The run's clock went 30 s on (the Permit timeout), past the 5 s the live queue
    # waits before its patch: the report is the same, and made once.
    timed_out = next(r for r in records if r.pod == "demo/waits")
    assert "timeout after waiting 30s" in (timed_out.message or "")
    out = io.StringIO()
    print_json(held[0], out)
    assert json.loads(out.getvalue()) == held[0].to_json()


async def test_the_table_lists_it_and_counts_it_apart() -> None:
    records = await simulate(load_cluster(CLUSTER, "c.yaml"), seed=0)
    out = io.StringIO()
    print_table(records, out)
    lines = out.getvalue().splitlines()
    [row] = [line for line in lines if line.startswith("NotReadyForScheduling")]
    assert row.split()[1] == "demo/gated"
    assert f"{GATES} (SchedulingGates)" in row
    assert lines[-1] == "2 bound, 1 failed scheduling, 1 not ready for scheduling"


async def test_replay_reports_it_as_the_recorded_run_did(tmp_path: Path) -> None:
    log = str(tmp_path / "events.jsonl")
    documents = load_cluster(CLUSTER, "c.yaml")
    original = await simulate(documents, seed=0, event_log=open_event_log(log))
    result = await replay(await read_all(open_event_log(log)), seed=0)
    assert [r.to_json() for r in result.decisions] == [r.to_json() for r in original]
    assert result.decisions[-1].kind == "NotReadyForScheduling"
