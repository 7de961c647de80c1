"""One descheduling cycle over a generated cluster, timed.

    python ops/bench/deschedule_cycle.py NODES PODS      # 5000 150000: the issue's size

Every pod belongs to a ReplicaSet of ten; a third of the nodes hold most pods. The
policy runs LowNodeUtilization, RemoveDuplicates and
RemovePodsViolatingTopologySpreadConstraint (Balance; one pod in ten is spread over three
zones) and
RemovePodsViolatingNodeTaints and PodLifeTime (Deschedule), with no limits. Prints
the time to build the cluster, the cycle's time, the evictions and the peak RSS.
"""

from __future__ import annotations

import resource
import sys
import time
from collections import Counter
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from contracts.k8s import LabelSelector, OwnerReference, TopologySpreadConstraint
from services.descheduler.api import ClusterView
from services.descheduler.nodefit import SchedulerFit
from services.descheduler.policy import load_policy
from services.descheduler.profile import run_cycle
from services.descheduler.registry import in_tree_registry
from tests.builders import make_node, make_pod

POLICY = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerPolicy",
    "profiles": [
        {
            "name": "bench",
            "plugins": {
                "balance": {
                    "enabled": [
                        "LowNodeUtilization",
                        "RemoveDuplicates",
                        "RemovePodsViolatingTopologySpreadConstraint",
                    ]
                },
                "deschedule": {"enabled": ["RemovePodsViolatingNodeTaints", "PodLifeTime"]},
            },
            "pluginConfig": [
                {"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 999_999_999}},
                {
                    "name": "LowNodeUtilization",
                    "args": {
                        "thresholds": {"cpu": 20, "pods": 20},
                        "targetThresholds": {"cpu": 50, "pods": 50},
                    },
                },
            ],
        }
    ],
}


def main(num_nodes: int, num_pods: int) -> None:
    start = time.perf_counter()
    allocatable = {"cpu": "32", "memory": "128Gi", "pods": 110}
    nodes = [
        make_node(f"n{i}", allocatable=allocatable, labels={"zone": f"z{i % 3}"})
        for i in range(num_nodes)
    ]
    spread = [
        TopologySpreadConstraint(
            max_skew=1,
            topology_key="zone",
            when_unsatisfiable="DoNotSchedule",
            label_selector=LabelSelector(match_labels={"app": "spread"}),
        )
    ]
    pods = []
    for j in range(num_pods):
        owner = f"rs{j % max(1, num_pods // 10)}"
        # Two pods of three on the first third of the nodes: they are overutilized.
        node = (j * 7) % (num_nodes // 3 or 1) if j % 3 else (j * 7) % num_nodes
        pod = make_pod(f"p{j}", requests={"cpu": "500m", "memory": "128Mi"}, node_name=f"n{node}")
        meta = msgspec.structs.replace(
            pod.metadata,
            owner_references=[
                OwnerReference(kind="ReplicaSet", api_version="apps/v1", name=owner, uid=owner)
            ],
            creation_timestamp="2024-01-01T00:00:00Z",
        )
        status = msgspec.structs.replace(pod.status, phase="Running")
        spec = pod.spec
        if j % 10 == 0:  # one pod in ten is spread over the zones
            meta = msgspec.structs.replace(meta, labels={"app": "spread"})
            spec = msgspec.structs.replace(spec, topology_spread_constraints=spread)
        pods.append(msgspec.structs.replace(pod, metadata=meta, spec=spec, status=status))
    built = time.perf_counter()
    registry = in_tree_registry()
    cluster = ClusterView(nodes, pods, 1.7e9)
    evictor, _ = run_cycle(load_policy(POLICY, registry), registry, cluster, SchedulerFit(cluster))
    done = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_plugin = Counter(e.options.plugin for e in evictor.evicted)
    print(
        f"{num_nodes} nodes, {num_pods} pods: built in {built - start:.1f} s, cycle "
        f"{done - built:.1f} s, {len(evictor.evicted)} evicted {dict(per_plugin)}, "
        f"peak RSS {rss:.0f} MB"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
