"""scheduler_perf's workload shapes for ``ksched bench``: nodes, init pods, measured pods.

Each :class:`Workload` follows one test case of upstream's
``test/integration/scheduler_perf`` (``misc/``, ``affinity/`` and
``topology_spreading/performance-config.yaml``) with its templates: the node template
(4 CPU, 32Gi, 110 pods), the ``labelNodePrepareStrategy`` zone labels, and the pod
templates' labels, priority, requests, affinity terms and spread constraints, in the
namespaces upstream creates them in (``namespace-<op index>`` unless the test names one).
A workload with a :class:`Churn` (upstream's ``churn`` op in ``create`` mode) also has
pods created at a fixed interval while the measured pods are scheduled.

Differences, all for a reproducible run: node ``i`` is ``node-i`` and carries
``kubernetes.io/hostname: node-i`` (as a kubelet would set it); the zone label cycles
through the strategy's values (upstream picks one at random per node); init pods
(upstream's ``initPods``, scheduled before the measurement starts) are created already
bound, pod ``i`` on node ``i mod nodes``, which is how the default scheduler spreads
identical pods over empty identical nodes.

Default pod counts scale upstream's 5000-node ``performance`` case to ``--nodes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

NODE_CAPACITY: Final = {"pods": "110", "cpu": "4", "memory": "32Gi"}
"""``templates/node-default.yaml``."""
POD_REQUESTS: Final = {"cpu": "100m", "memory": "500Mi"}
"""Requests (and limits) of every pod template used here."""
ZONE: Final = "topology.kubernetes.io/zone"
HOSTNAME: Final = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """A pod template: ``generateName`` prefix, labels, the spec fields beyond the single
    ``pause`` container every template has, and that container's resources."""

    prefix: str
    labels: Mapping[str, str] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict)
    requests: Mapping[str, str] = field(default_factory=lambda: dict(POD_REQUESTS))
    limits: Mapping[str, str] | None = field(default_factory=lambda: dict(POD_REQUESTS))
    """None: the template sets no limits."""


DEFAULT_POD = PodTemplate("pod-")
"""``templates/pod-default.yaml``."""
NODE_AFFINITY_POD = PodTemplate(
    "node-affinity-",
    spec={
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}
                            ]
                        }
                    ]
                }
            }
        }
    },
)
"""``templates/pod-with-node-affinity.yaml``."""
SPREADING_POD = PodTemplate(
    "spreading-pod-",
    labels={"color": "blue"},
    spec={
        "topologySpreadConstraints": [
            {
                "maxSkew": 5,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    },
)
"""``templates/pod-with-topology-spreading.yaml``."""


def _pod_affinity(kind: str, color: str, topology_key: str) -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": topology_key,
        "namespaces": ["sched-1", "sched-0"],
    }
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


ANTI_AFFINITY_POD = PodTemplate(
    "anti-affinity-pod-",
    labels={"color": "green"},
    spec=_pod_affinity("podAntiAffinity", "green", HOSTNAME),
)
"""``templates/pod-with-pod-anti-affinity.yaml``."""
AFFINITY_POD = PodTemplate(
    "affinity-pod-",
    labels={"color": "blue"},
    spec=_pod_affinity("podAffinity", "blue", ZONE),
)
"""``templates/pod-with-pod-affinity.yaml``."""
HIGH_PRIORITY_LARGE_CPU_POD = PodTemplate(
    "pod-h-",
    spec={"priority": 10},
    requests={"cpu": "9", "memory": "500Mi"},
    limits=None,
)
"""``templates/pod-high-priority-large-cpu.yaml``: 9 CPU fits no 4-CPU node, ever."""


@dataclass(frozen=True, slots=True)
class Churn:
    """Upstream's ``churn`` op in ``create`` mode: a pod from ``template`` every
    ``interval`` seconds in ``namespace``, for as long as the measurement runs."""

    template: PodTemplate
    namespace: str
    interval: float

    def pod(self, i: int) -> dict[str, Any]:
        """Churn pod ``i``, pending."""
        return _pod(self.template, self.namespace, i)


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    init_pod: PodTemplate
    measured_pod: PodTemplate
    init_namespace: str
    measured_namespace: str
    init_pods: int
    """Init pods of upstream's 5000-node performance case (scaled to the node count)."""
    measured_pods: int
    """Measured pods of the same case."""
    zones: tuple[str, ...] = ()
    """``labelNodePrepareStrategy`` values for ``topology.kubernetes.io/zone``."""
    churn: Churn | None = None
    """Pods created during the measurement (None: none)."""

    def counts(
        self, nodes: int, init: int | None = None, measured: int | None = None
    ) -> tuple[int, int]:
        """Init and measured pods for ``nodes`` nodes: the given ones, else upstream's
        counts scaled from 5000 nodes."""
        scale = nodes / 5000
        return (
            init if init is not None else round(self.init_pods * scale),
            measured if measured is not None else max(1, round(self.measured_pods * scale)),
        )

    def node(self, i: int) -> dict[str, Any]:
        """Node ``node-i`` as ``kubectl get -o json`` would show it."""
        name = f"node-{i}"
        labels = {HOSTNAME: name}
        if self.zones:
            labels[ZONE] = self.zones[i % len(self.zones)]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {
                "capacity": NODE_CAPACITY,
                "allocatable": NODE_CAPACITY,
                "conditions": [{"type": "Ready", "status": "True"}],
                "phase": "Running",
            },
        }

    def init(self, i: int, nodes: int) -> dict[str, Any]:
        """Init pod ``i``, bound to node ``i mod nodes``."""
        pod = _pod(self.init_pod, self.init_namespace, i)
        pod["spec"]["nodeName"] = f"node-{i % nodes}"
        return pod

    def measured(self, i: int) -> dict[str, Any]:
        """Measured pod ``i``, pending."""
        return _pod(self.measured_pod, self.measured_namespace, i)

    def measured_key(self, i: int) -> str:
        """``namespace/name`` of measured pod ``i``."""
        return f"{self.measured_namespace}/{self.measured_pod.prefix}{i}"


def _pod(template: PodTemplate, namespace: str, i: int) -> dict[str, Any]:
    name = f"{template.prefix}{i}"
    resources: dict[str, Any] = {"requests": dict(template.requests)}
    if template.limits is not None:
        resources["limits"] = dict(template.limits)
    container = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10.1",
        "ports": [{"containerPort": 80}],
        "resources": resources,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"bench-{namespace}-{name}",
            "labels": dict(template.labels),
        },
        "spec": {**template.spec, "containers": [container]},
    }


WORKLOADS: Final = {
    w.name: w
    for w in (
        # misc/performance-config.yaml, 5000Nodes_10000Pods.
        Workload("SchedulingBasic", DEFAULT_POD, DEFAULT_POD, "namespace-1", "namespace-2",
                 1000, 10000),
        # affinity/performance-config.yaml, 5000Nodes_10000Pods.
        Workload("SchedulingNodeAffinity", NODE_AFFINITY_POD, NODE_AFFINITY_POD,
                 "namespace-1", "namespace-2", 5000, 10000, zones=("zone1",)),
        # topology_spreading/performance-config.yaml, 5000Nodes_5000Pods.
        Workload("TopologySpreading", DEFAULT_POD, SPREADING_POD, "namespace-1",
                 "namespace-2", 5000, 5000, zones=("moon-1", "moon-2", "moon-3")),
        # affinity/performance-config.yaml, 5000Nodes_2000Pods.
        Workload("SchedulingPodAntiAffinity", ANTI_AFFINITY_POD, ANTI_AFFINITY_POD, "sched-0",
                 "sched-1", 1000, 2000),
        # affinity/performance-config.yaml, 5000Nodes_5000Pods.
        Workload("SchedulingPodAffinity", AFFINITY_POD, AFFINITY_POD, "sched-0", "sched-1",
                 5000, 5000, zones=("zone1",)),
        # misc/performance-config.yaml, 5kNodes/100Init/10kPods: a pod that can never
        # fit (priority 10, so it is tried before the measured pods) every 200 ms.
        Workload("Unschedulable", DEFAULT_POD, DEFAULT_POD, "namespace-1", "namespace-3",
                 100, 10000,
                 churn=Churn(HIGH_PRIORITY_LARGE_CPU_POD, "namespace-2", 0.2)),
    )
}  # fmt: skip
"""Every workload ``ksched bench`` runs, by upstream's test case name."""
