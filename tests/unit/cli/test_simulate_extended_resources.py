"""``ksched simulate`` with an extended resource backed by DRA (DRAExtendedResource): a
pod asking ``example.com/gpu: 1`` on nodes that do not advertise it is placed where a
DeviceClass serving ``example.com/gpu`` has a free device; DynamicResources' claim for
it is applied (it joins the cluster, allocated and reserved for the pod; the pod's
``status.extendedResourceClaimStatus`` names it) and printed as a ``ClaimAllocation``
line before the pod's Binding, with upstream's name for it as ``podClaim``; the claim
goes when its pod goes."""

from __future__ import annotations

import msgspec

from contracts import topology
from contracts.k8s import Pod, ResourceClaim
from contracts.k8s.resource import EXTENDED_RESOURCE_CLAIM_ANNOTATION
from services.cli.embedded import EmbeddedCluster
from services.cli.simulate import load_cluster, simulate
from services.common.bus import Message
from services.common.clock import FakeClock

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  extendedResourceName: example.com/gpu
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-gpus}
spec:
  driver: gpu.example.com
  nodeName: n2
  pool: {name: n2, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
"""


def pod(name: str) -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml}}
spec:
  containers:
  - name: main
    resources: {{requests: {{example.com/gpu: "1"}}, limits: {{example.com/gpu: "1"}}}}
"""


PODS = "".join(pod(n) for n in ("a", "b", "c"))


async def test_a_pod_asking_for_a_dra_backed_extended_resource_is_placed() -> None:
    records = await simulate(load_cluster(CLUSTER + PODS, "cluster.yaml"), seed=0)
    lines = [r.to_json() for r in records]
    placed = [line for line in lines if line["kind"] != "FailedScheduling"]
    assert [(line["kind"], line["pod"]) for line in placed] == [
        ("ClaimAllocation", "ml/a"),
        ("Binding", "ml/a"),
        ("ClaimAllocation", "ml/b"),
        ("Binding", "ml/b"),
    ]
    (failed,) = [line for line in lines if line["kind"] == "FailedScheduling"]
    assert failed["pod"] == "ml/c"
    assert str(failed["message"]).startswith("0/2 nodes are available: 2 cannot allocate all")
    first = placed[0]
    assert first["podClaim"] == "<extended-resources>"
    assert str(first["claim"]).startswith("ml/a-extended-resources-")
    assert first["node"] == "n2" and placed[1]["node"] == "n2"
    assert first["results"] == [
        {
            "request": "container-0-request-0",
            "driver": "gpu.example.com",
            "pool": "n2",
            "device": first["results"][0]["device"],
        }
    ]
    devices = {line["results"][0]["device"] for line in placed if line["kind"] == "ClaimAllocation"}
    assert devices == {"gpu-0", "gpu-1"}


async def test_the_claim_joins_the_cluster_and_leaves_with_its_pod() -> None:
    cluster = EmbeddedCluster(clock=FakeClock(), seed=0)
    await cluster.start()
    try:
        await cluster.publish_and_schedule(load_cluster(CLUSTER + pod("a"), "cluster.yaml"))
        claims = [
            msgspec.json.decode(b, type=ResourceClaim)
            for b in (await cluster.store.objects("resourceclaim")).values()
        ]
        assert len(claims) == 1
        (claim,) = claims
        assert claim.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION] == "true"
        assert claim.status.allocation is not None
        assert [r.name for r in claim.status.reserved_for] == ["a"]
        stored = (await cluster.store.objects("pod"))["ml/a"]
        bound = msgspec.json.decode(stored, type=Pod)
        assert bound.spec.node_name == "n2"
        status = bound.status.extended_resource_claim_status
        assert status is not None and status.resource_claim_name == claim.metadata.name
        assert [
            (m.container_name, m.resource_name, m.request_name) for m in status.request_mappings
        ] == [("main", "example.com/gpu", "container-0-request-0")]

        deleted = b'{"type":"DELETED","object":' + stored + b"}"
        key = topology.event_key("pod", "DELETED")
        await cluster.bus.publish([Message(topology.EVENTS.name, key, deleted)])
        await cluster.bus.wait_idle()
        assert await cluster.store.objects("resourceclaim") == {}
    finally:
        await cluster.stop()
