"""The embedded mode plays the API server's part in DRA: a ``claim.<namespace>``
decision is applied (the claim's MODIFIED watch event goes to the informer) and
recorded as a ``ClaimAllocation`` just before the Binding of the pod it is reserved
for, naming the pod's own name for the claim. The binder's publish is played here by
hand (claims, then the Binding, as DynamicResources' PreBind and DefaultBinder leave
them)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import msgspec

from contracts import topology
from contracts.k8s import Pod
from services.cli.embedded import DecisionRecord, EmbeddedCluster
from services.cli.simulate import load_cluster, print_json, print_table, simulate
from services.common.bus import Delivery, Message
from services.common.decisions import ATTEMPT_HEADER, binding_for
from tests.builders import make_pod

TRAINER = msgspec.json.decode(
    msgspec.json.encode(
        {
            "metadata": {"name": "trainer", "namespace": "ml", "uid": "uid-trainer"},
            "spec": {
                "containers": [{"name": "c"}],
                "resourceClaims": [
                    {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                    {"name": "nic", "resourceClaimName": "shared-nic"},
                ],
            },
            "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "tr-gpu"}]},
        }
    ),
    type=Pod,
)


def claim_decision(name: str, device: str, *, pod: str = "trainer") -> Message:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "req",
                            "driver": "gpu.example.com",
                            "pool": "n1",
                            "device": device,
                        }
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}],
        },
    }
    key = topology.decision_key(topology.CLAIM_DECISION, "ml")
    return Message(topology.DECISIONS.name, key, msgspec.json.encode(claim), {ATTEMPT_HEADER: "1"})


def binding(pod: Pod, node: str) -> Message:
    body = msgspec.json.encode(binding_for(pod, node))
    key = topology.decision_key("binding", pod.metadata.namespace)
    return Message(topology.DECISIONS.name, key, body, {ATTEMPT_HEADER: "1"})


async def run(messages: Sequence[Message]) -> tuple[list[DecisionRecord], list[bytes]]:
    """The records the embedded cluster makes of ``messages`` (published after the
    trainer pod), and the claim events it applied."""
    cluster = EmbeddedCluster()
    applied: list[bytes] = []

    async def collect(deliveries: Sequence[Delivery]) -> None:
        applied.extend(d.body for d in deliveries)

    spy = topology.QueueSpec(
        "test.claims",
        (topology.QueueBinding(topology.EVENTS.name, "resourceclaim.*"),),
        dead_letter=False,
    )
    await cluster.start()
    try:
        await cluster.bus.consume_raw(spy, collect)
        pod_event = msgspec.json.encode({"type": "ADDED", "object": TRAINER})
        await cluster.bus.publish([Message(topology.EVENTS.name, "pod.added", pod_event)])
        await cluster.bus.wait_idle()
        await cluster.bus.publish(list(messages))
        await cluster.bus.wait_idle()
    finally:
        await cluster.stop()
    return cluster.decisions, applied


async def test_claims_are_applied_and_recorded_before_the_pods_binding() -> None:
    other = make_pod("other", "ml", uid="uid-other")
    records, applied = await run(
        [
            claim_decision("tr-gpu", "gpu-0"),
            claim_decision("shared-nic", "nic-0"),
            binding(other, "n2"),
            binding(TRAINER, "n1"),
        ]
    )
    assert [(r.kind, r.pod) for r in records] == [
        ("Binding", "ml/other"),
        ("ClaimAllocation", "ml/trainer"),
        ("ClaimAllocation", "ml/trainer"),
        ("Binding", "ml/trainer"),
    ]
    assert records[1].to_json() == {
        "kind": "ClaimAllocation",
        "claim": "ml/tr-gpu",
        "pod": "ml/trainer",
        "podClaim": "gpu",
        "node": "n1",
        "results": [
            {"request": "req", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
        ],
    }
    assert (records[2].claim, records[2].pod_claim) == ("ml/shared-nic", "nic")
    events = [json.loads(body) for body in applied]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "tr-gpu"),
        ("MODIFIED", "shared-nic"),
    ]
    assert events[0]["object"]["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


async def test_json_and_table_output() -> None:
    records, _ = await run([claim_decision("tr-gpu", "gpu-0"), binding(TRAINER, "n1")])
    out = io.StringIO()
    for record in records:
        print_json(record, out)
    kinds = [json.loads(line)["kind"] for line in out.getvalue().splitlines()]
    assert kinds == ["ClaimAllocation", "Binding"]

    table = io.StringIO()
    print_table(records, table)
    lines = table.getvalue().splitlines()
    assert lines[1].split() == [
        "ClaimAllocation",
        "ml/trainer",
        "n1:",
        "ml/tr-gpu",
        "(gpu)",
        "req=gpu.example.com/n1/gpu-0",
        "1",
    ]
    assert lines[2].split() == ["Binding", "ml/trainer", "n1", "1"]
    assert lines[-1] == "1 bound, 0 failed scheduling"


GPU_EXAMPLE = Path(__file__).resolve().parents[3] / "ops" / "examples" / "gpu-cluster.yaml"


async def test_the_gpu_example_prints_each_claim_before_its_pods_binding() -> None:
    """ops/examples/gpu-cluster.yaml with DynamicResources: every claim allocated is a
    ClaimAllocation line just before its pod's Binding, on its node; the second pod of
    the shared claim allocates nothing (its Binding alone); no device is given to two
    claims."""
    documents = load_cluster(GPU_EXAMPLE.read_text(), str(GPU_EXAMPLE))
    records = await simulate(documents, seed=0)
    bound = [i for i, r in enumerate(records) if r.kind == "Binding"]
    sharing = [r.pod for r in records if r.kind == "Binding" and r.pod.startswith("default/infer")]
    assert len(bound) == 7 and len(sharing) == 2
    allocated = [r.claim for r in records if r.kind == "ClaimAllocation"]
    assert len(allocated) == len(set(allocated)) == 6
    for i in bound:
        if records[i].pod == sharing[1]:
            assert records[i - 1].kind == "Binding"
            continue
        claim = records[i - 1]
        assert (claim.kind, claim.pod, claim.node) == (
            "ClaimAllocation",
            records[i].pod,
            records[i].node,
        )
        assert claim.pod_claim == "gpu" and claim.results
    owners: dict[str, str] = {}
    for r in records:
        if r.kind == "ClaimAllocation":
            for res in r.results:
                device = f"{res['driver']}/{res['pool']}/{res['device']}"
                assert owners.setdefault(device, r.claim or "") == r.claim, device
                assert res["pool"] == r.node  # node-local pools, named after their node
