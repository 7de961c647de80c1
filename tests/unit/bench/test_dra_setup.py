"""The DRA setup of ``ksched bench``'s DRA workloads (bench.dra): every init pod bound
with its claims allocated on its node, no device handed out twice, and the measured
pods' claims present (shared ones) or left to the claim controller (templates)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from bench.config import load_workloads
from bench.dra import fill_index

NODES = 20


def claims_of(objects: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
        for kind, o in objects
        if kind == "resourceclaim"
    }


@pytest.mark.parametrize(
    "name", ["SchedulingWithResourceClaimTemplate", "SchedulingWithResourceClaim"]
)
def test_init_pods_hold_their_devices_on_their_nodes(name: str) -> None:
    workload = load_workloads()[name]
    init, pods = workload.counts(NODES)
    objects, init_pods = workload.setup(NODES, init, pods)
    kinds = Counter(kind for kind, _ in objects)
    assert kinds["resourceslice"] == NODES and kinds["deviceclass"] == 1
    claims = claims_of(objects)
    taken = Counter(
        (r["pool"], r["device"])
        for c in claims.values()
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
    )
    assert taken and max(taken.values()) == 1  # no device twice
    assert len(init_pods) == init > 0
    for pod in init_pods:
        node, namespace = pod["spec"]["nodeName"], pod["metadata"]["namespace"]
        statuses = {s["name"]: s["resourceClaimName"] for s in
                    pod.get("status", {}).get("resourceClaimStatuses", [])}  # fmt: skip
        for entry in pod["spec"]["resourceClaims"]:
            claim_name = entry.get("resourceClaimName") or statuses[entry["name"]]
            claim = claims[f"{namespace}/{claim_name}"]
            [result] = claim["status"]["allocation"]["devices"]["results"]
            assert result["pool"] == node
            reserved = [r["uid"] for r in claim["status"]["reservedFor"]]
            assert pod["metadata"]["uid"] in reserved


def test_shared_claims_exist_for_every_measured_pod() -> None:
    workload = load_workloads()["SchedulingWithResourceClaim"]
    init, pods = workload.counts(NODES)
    objects, _ = workload.setup(NODES, init, pods)
    claims = claims_of(objects)
    for i in range(pods):
        pod = workload.measured(i)
        [entry] = pod["spec"]["resourceClaims"]
        assert entry["resourceClaimName"] == f"test-claim-{i // 5}"
        assert f"test/{entry['resourceClaimName']}" in claims


@pytest.mark.parametrize(
    ("text", "index", "expected"),
    [
        ("test-claim-{{DivideInt .Index 5}}", 12, "test-claim-2"),
        ("pod-{{.Index}}", 7, "pod-7"),
        ("pod-{{ .Index }}-x", 3, "pod-3-x"),
        ("plain", 3, "plain"),
    ],
)
def test_upstream_index_expressions(text: str, index: int, expected: str) -> None:
    assert fill_index({"a": [text]}, index) == {"a": [expected]}
