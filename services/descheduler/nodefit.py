"""nodeFit through the scheduler's own filters.

Upstream's ``nodeutil.NodeFit`` re-implements part of the scheduler (unschedulable
nodes, nodeSelector and required node affinity, NoSchedule/NoExecute taints, inter-pod
anti-affinity, requests). ksched instead runs the scheduler framework's PreFilter and
Filter plugins of a scheduler profile (the configuration's first unless
DefaultEvictor's ``nodeFitProfile`` names another) on a snapshot of the cycle's
cluster with the pod taken off its node: the same code that will place the pod
again, so every filter counts (ports, volumes, topology spread, pod affinity too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from contracts.k8s import Node, Pod
from services.descheduler.api import ClusterView
from services.framework.api.interface import CycleState
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.config import Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework


class UnknownProfileError(ValueError):
    """A policy names a scheduler profile the scheduler configuration lacks."""


class SchedulerFit:
    """``fit(pod, nodes)``: does ``pod`` pass every filter of the first scheduler
    profile on one of ``nodes``? ``for_profile(name)`` asks another profile's filters
    (DefaultEvictor's ``nodeFitProfile``); the snapshot is shared."""

    def __init__(
        self, cluster: ClusterView, profiles: Profile | Sequence[Profile] | None = None
    ) -> None:
        self._cluster = cluster
        if profiles is None:
            profiles = (default_profile(),)
        elif isinstance(profiles, Profile):
            profiles = (profiles,)
        self._profiles = {p.scheduler_name: p for p in profiles}
        self._first = next(iter(self._profiles))
        self._cache: Cache | None = None
        self._frameworks: dict[str, Framework] = {}

    @property
    def profile_names(self) -> list[str]:
        return list(self._profiles)

    @property
    def cache(self) -> Cache:
        """The snapshot, built on the first question (a cycle whose plugins never ask
        pays nothing)."""
        if self._cache is None:
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
            for obj in cluster.dra:
                cache.listers.put(obj)
            self._cache = cache
        return self._cache

    def framework_of(self, name: str | None = None) -> Framework:
        name = name or self._first
        found = self._frameworks.get(name)
        if found is None:
            profile = self._profiles.get(name)
            if profile is None:
                raise UnknownProfileError(name)
            found = Framework(profile, in_tree_registry(), listers=self.cache.listers)
            self._frameworks[name] = found
        return found

    @property
    def framework(self) -> Framework:
        return self.framework_of()

    def for_profile(self, name: str) -> Callable[[Pod, Sequence[Node]], bool]:
        if name not in self._profiles:
            raise UnknownProfileError(name)
        return lambda pod, nodes: self.fits(pod, nodes, name)

    def __call__(self, pod: Pod, nodes: Sequence[Node]) -> bool:
        return self.fits(pod, nodes, None)

    def fits(self, pod: Pod, nodes: Sequence[Node], profile: str | None) -> bool:
        if not nodes:
            return False
        cache, framework = self.cache, self.framework_of(profile)
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
            rows = [view.index[n.metadata.name] for n in nodes if n.metadata.name in view.index]
            return bool(rows) and bool(framework.fits_many(state, info, view, rows).any())
        finally:
            if placed:
                cache.add_pod(pod)


__all__ = ["SchedulerFit", "UnknownProfileError"]
