"""PostFilter's deallocation in ``simulate``: a claim allocated on a node that can no
longer host its pod (tainted since) is deallocated by DynamicResources' PostFilter
(a ``claim.<namespace>`` decision the embedded cluster applies), and the pod's next
attempt allocates a device on the other node and binds there. A device with binding
conditions is never readied in ``simulate`` (it plays no driver): PreBind's wait runs
out after ``bindingTimeout`` of simulated time, the next attempt deallocates the claim,
and the run still ends."""

from __future__ import annotations

from services.cli.simulate import load_cluster, simulate

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
spec:
  taints: [{key: maintenance, value: "true", effect: NoSchedule}]
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-gpu}
spec:
  driver: gpu.example.com
  nodeName: n2
  pool: {name: n2, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gpu
  namespace: default
  uid: uid-claim
  finalizers: [resource.kubernetes.io/delete-protection]
spec:
  devices:
    requests:
    - name: req
      exactly: {deviceClassName: gpu}
status:
  allocation:
    devices:
      results: [{request: req, driver: gpu.example.com, pool: n1, device: gpu-0}]
    nodeSelector:
      nodeSelectorTerms:
      - matchFields: [{key: metadata.name, operator: In, values: [n1]}]
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default, uid: uid-trainer}
spec:
  containers: [{name: c}]
  resourceClaims: [{name: gpu, resourceClaimName: gpu}]
"""


async def test_a_claim_stuck_on_a_tainted_node_is_deallocated_and_the_pod_lands_elsewhere() -> None:
    records = await simulate(load_cluster(CLUSTER, "cluster.yaml"), seed=0)
    kinds = [(r.kind, r.pod, r.node) for r in records]
    failed = [r for r in records if r.kind == "FailedScheduling"]
    assert failed and "deallocation of ResourceClaim completed" in failed[0].message
    allocation = next(r for r in records if r.kind == "ClaimAllocation")
    assert allocation.node == "n2"
    assert [dict(x) for x in allocation.results] == [
        {"request": "req", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"}
    ]
    assert kinds[-1] == ("Binding", "default/trainer", "n2")


CONDITIONAL = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0, bindingConditions: [ready], bindingFailureConditions: [failed]}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu, namespace: default}
spec:
  devices:
    requests:
    - name: req
      exactly: {deviceClassName: gpu}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  containers: [{name: c}]
  resourceClaims: [{name: gpu, resourceClaimName: gpu}]
"""


async def test_a_device_nobody_readies_times_out_and_its_claim_is_freed() -> None:
    records = await simulate(load_cluster(CONDITIONAL, "cluster.yaml"), seed=0)
    assert [r.kind for r in records if r.kind != "FailedScheduling"] == []
    messages = [r.message for r in records]
    assert messages[0] == 'running PreBind plugin "DynamicResources": device binding timeout'
    assert "deallocation of ResourceClaim completed" in messages[1]
