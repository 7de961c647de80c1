"""DRA objects in a cluster file (a kubectl List dump): loaded, published before the
pods; the claim generated for a template claim is named from the seed, recorded in the
log, and a replay reads it from there instead of generating another."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contracts.events import LogEntry
from services.cli.embedded import EmbeddedCluster
from services.cli.replay import segments
from services.cli.simulate import load_cluster, simulate
from services.common.clock import FakeClock
from services.common.eventlog import open_event_log, read_all
from services.common.eventlog.memory import MemoryEventLog

SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
DUMP = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train", "namespace": "ml", "uid": "u-train"},
            "spec": {
                "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            },
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-gpu"},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "n1",
                "devices": [{"name": "gpu-0"}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "ml"},
            "spec": {"spec": SPEC},
        },
    ],
}  # fmt: skip


def _generated(entries: list[LogEntry]) -> list[tuple[str, str, str]]:
    return [
        (str(e.__struct_config__.tag), e.type, e.object.metadata.name)
        for e in entries
        if e.origin == "controller"
    ]


def test_dra_kinds_load_and_go_before_the_pods() -> None:
    documents = load_cluster(json.dumps(DUMP), "dump.json")
    assert [d.kind for d in documents] == [
        "node",
        "deviceclass",
        "resourceslice",
        "resourceclaimtemplate",
        "pod",
    ]


async def test_the_generated_name_comes_from_the_seed_and_replay_reads_it(
    tmp_path: Path,
) -> None:
    documents = load_cluster(json.dumps(DUMP), "dump.json")
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for path in paths:
        await simulate(documents, seed=3, event_log=open_event_log(str(path)))
    first, second = [await read_all(open_event_log(str(p))) for p in paths]
    generated = _generated(first)
    assert [(kind, type_) for kind, type_, _ in generated] == [
        ("resourceclaim", "ADDED"),
        ("pod", "MODIFIED"),
    ]
    assert generated[0][2].startswith("train-gpu-")
    assert _generated(second) == generated  # the same seed, the same name

    replayed = MemoryEventLog()
    cluster = EmbeddedCluster(clock=FakeClock(), seed=99, event_log=replayed, generate_claims=False)
    await cluster.start()
    try:
        parts, _ = segments(first)
        for part in parts:
            await cluster.publish_and_schedule(part)
    finally:
        await cluster.stop()
    again: list[Any] = await read_all(replayed)
    claims = [
        (e.type, e.object.metadata.name)
        for e in again
        if e.__struct_config__.tag == "resourceclaim"
    ]
    # Read from the log, not generated with seed 99 (then allocated: the embedded
    # cluster applies the binder's claim decision as a MODIFIED event).
    assert [name for type_, name in claims if type_ == "ADDED"] == [generated[0][2]]
    assert {name for _, name in claims} == {generated[0][2]}
