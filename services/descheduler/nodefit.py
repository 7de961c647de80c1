"""nodeFit through the scheduler's own filters.

Upstream's ``nodeutil.NodeFit`` re-implements part of the scheduler (unschedulable
nodes, nodeSelector and required node affinity, NoSchedule/NoExecute taints, inter-pod
anti-affinity, requests). ksched instead runs the scheduler framework's PreFilter and
Filter plugins of a scheduler profile (the default one unless the deschedule command
or service is given another) on a snapshot of the cycle's cluster with the pod taken
off its node: the same code that will place the pod again, so every filter counts —
ports, volumes, topology spread, pod affinity too.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from contracts.k8s import Node, Pod
from services.descheduler.api import ClusterView
from services.framework.api.interface import CycleState
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.config import Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework


class SchedulerFit:
    """``fit(pod, nodes)``: does ``pod`` pass every filter on one of ``nodes``?"""

    def __init__(self, cluster: ClusterView, profile: Profile | None = None) -> None:
        self._cluster = cluster
        self._profile = profile
        self._cache: Cache | None = None
        self._framework: Framework | None = None

    def _build(self) -> tuple[Cache, Framework]:
        """The snapshot and framework, built on the first question (a cycle whose
        plugins never ask pays nothing)."""
        if self._cache is None or self._framework is None:
            cluster = self._cluster
            cache = Cache()
            for node in cluster.nodes:
                cache.add_node(node)
            for pod in cluster.pods:
                if pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed"):
                    cache.add_pod(pod)
            for claim in cluster.claims.values():
                cache.listers.put(claim)
            for namespace in cluster.namespaces.values():
                cache.listers.put(namespace)
            self._cache = cache
            self._framework = Framework(
                self._profile or default_profile(), in_tree_registry(), listers=cache.listers
            )
        return self._cache, self._framework

    @property
    def cache(self) -> Cache:
        return self._build()[0]

    @property
    def framework(self) -> Framework:
        return self._build()[1]

    def __call__(self, pod: Pod, nodes: Sequence[Node]) -> bool:
        if not nodes:
            return False
        cache, framework = self._build()
        uid = pod.metadata.uid
        placed = cache.is_bound(uid)
        if placed:
            cache.remove_pod(uid)
        try:
            view = cache.snapshot()
            loose = msgspec.structs.replace(
                pod, spec=msgspec.structs.replace(pod.spec, node_name=None)
            )
            info = PodInfo.of(loose)
            state = CycleState()
            if not framework.run_pre_filter_plugins(state, info, view).is_success():
                return False
            passed, _ = framework.filter_many(state, info, view)
            rows = [view.index[n.metadata.name] for n in nodes if n.metadata.name in view.index]
            return bool(rows) and bool(passed[rows].any())
        finally:
            if placed:
                cache.add_pod(pod)


__all__ = ["SchedulerFit"]
