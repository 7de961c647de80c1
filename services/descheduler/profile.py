"""One descheduling cycle (descheduler ``runProfiles`` and ``pkg/framework/profile``).

The Ready nodes matching the policy's ``nodeSelector`` are the cycle's nodes; with one
node or none the cycle is skipped (evicting would only disrupt). Then every profile's
Deschedule plugins run, profile after profile, then every profile's Balance plugins.
One :class:`~services.descheduler.evictions.PodEvictor` serves them all, so the limits
count the whole cycle. A plugin's error is recorded and the next plugin runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.k8s import Node, Pod
from services.descheduler.api import (
    ClusterView,
    EvictOptions,
    ExplainingEvictorPlugin,
    Registry,
)
from services.descheduler.evictions import Limits, PodEvictor
from services.descheduler.nodes import ready_nodes
from services.descheduler.policy import Policy, Profile
from services.framework.api.registry import ConfigError

FitCheck = Callable[[Pod, Sequence[Node]], bool]
"""Does the pod fit one of these nodes other than its own (the scheduler's filters)?"""


Check = Callable[[Pod], list[str]]
"""Why one evictor plugin refuses a pod at one point (empty: it passes)."""


def _check(plugin: Any, point: str) -> Check:
    """The plugin's reasons at ``point``, or, for a plugin that gives none, one naming it."""
    if isinstance(plugin, ExplainingEvictorPlugin):
        return plugin.reasons if point == "filter" else plugin.pre_eviction_reasons
    passes = plugin.filter if point == "filter" else plugin.pre_eviction_filter
    refused = [f"refused by {plugin.name} ({point})"]
    return lambda pod: [] if passes(pod) else refused


class ProfileEvictor:
    """``evictorImpl``: the profile's Filter and PreEvictionFilter plugins, and the
    cycle's evictor with the profile's name on every eviction. A pod a plugin refuses
    is recorded with the reasons (:meth:`PodEvictor.refuse`)."""

    def __init__(self, profile: str, evictor: PodEvictor) -> None:
        self.profile = profile
        self.pod_evictor = evictor
        self._filters: list[Check] = []
        self._pre_eviction_filters: list[Check] = []

    def wire(self, filters: Sequence[Any], pre_eviction_filters: Sequence[Any]) -> None:
        self._filters = [_check(p, "filter") for p in filters]
        self._pre_eviction_filters = [_check(p, "preEvictionFilter") for p in pre_eviction_filters]

    def _passes(self, checks: Sequence[Check], pod: Pod) -> bool:
        for check in checks:
            reasons = check(pod)
            if reasons:
                self.pod_evictor.refuse(pod, reasons)
                return False
        return True

    def filter(self, pod: Pod) -> bool:
        return self._passes(self._filters, pod)

    def pre_eviction_filter(self, pod: Pod) -> bool:
        return self._passes(self._pre_eviction_filters, pod)

    def evict(self, pod: Pod, options: EvictOptions) -> None:
        self.pod_evictor.evict(pod, EvictOptions(options.plugin, self.profile, options.reason))


@dataclass
class PluginHandle:
    """What every plugin of a profile is built with."""

    evictor: ProfileEvictor
    cluster: ClusterView
    fit: FitCheck

    def fits_other_node(self, pod: Pod, nodes: Sequence[Node]) -> bool:
        others = [n for n in nodes if n.metadata.name != pod.spec.node_name]
        return bool(others) and self.fit(pod, others)

    def fits_any_node(self, pod: Pod, nodes: Sequence[Node]) -> bool:
        return self.fit(pod, nodes)


@dataclass
class CycleResult:
    nodes: list[str] = field(default_factory=list)
    skipped: str = ""
    """Why the cycle did nothing (``requires >=2 nodes``), else empty."""
    errors: list[str] = field(default_factory=list)
    plugins: dict[str, Any] = field(default_factory=dict)
    """``profile/plugin`` → the plugin instance (for what it reports, e.g. how a
    utilization plugin classified the nodes)."""


def build_profile(
    profile: Profile, registry: Registry, handle: PluginHandle
) -> tuple[list[Any], list[Any]]:
    """Each enabled plugin built once (``buildPlugin``), the evictor's filters wired;
    the (deschedule, balance) plugins in order."""
    built: dict[str, Any] = {}
    for point in ("filter", "preEvictionFilter", "deschedule", "balance"):
        for name in profile.plugins[point]:
            if name not in built:
                built[name] = registry[name].factory(profile.args.get(name), handle)
    handle.evictor.wire(
        [built[n] for n in profile.plugins["filter"]],
        [built[n] for n in profile.plugins["preEvictionFilter"]],
    )
    return (
        [built[n] for n in profile.plugins["deschedule"]],
        [built[n] for n in profile.plugins["balance"]],
    )


def node_fit_profile(profile: Profile) -> str:
    """The scheduler profile DefaultEvictor's ``nodeFitProfile`` names, or ""."""
    return str(getattr(profile.args.get("DefaultEvictor"), "node_fit_profile", "") or "")


def check_node_fit_profiles(policy: Policy, scheduler_profiles: Sequence[str]) -> None:
    """Raises ConfigError naming the field when a descheduler profile's
    ``nodeFitProfile`` is not one of the scheduler configuration's profiles."""
    for i, profile in enumerate(policy.profiles):
        named = node_fit_profile(profile)
        if named and named not in scheduler_profiles:
            raise ConfigError(
                f"profiles[{i}].pluginConfig[name=DefaultEvictor].args.nodeFitProfile",
                f'Not found: "{named}": the scheduler configuration\'s profiles are '
                f"{', '.join(scheduler_profiles)}",
            )


def run_cycle(
    policy: Policy,
    registry: Registry,
    cluster: ClusterView,
    fit: FitCheck,
    *,
    outstanding: Sequence[Pod] = (),
    on_result: Callable[[Pod, EvictOptions, str], None] | None = None,
    on_plugin: Callable[[str, str, float], None] | None = None,
) -> tuple[PodEvictor, CycleResult]:
    """One cycle over ``cluster``: the evictions decided (``evictor.evicted``, in
    order) and what happened."""
    evictor = PodEvictor(
        Limits(policy.max_per_node, policy.max_per_namespace, policy.max_total),
        pdbs=cluster.pdbs,
        outstanding=outstanding,
        on_result=on_result,
    )
    result = CycleResult()
    nodes = ready_nodes(cluster.nodes, policy.node_selector)
    result.nodes = [n.metadata.name for n in nodes]
    if len(nodes) <= 1:
        result.skipped = f"Skipping descheduling cycle: requires >=2 nodes, found {len(nodes)}"
        return evictor, result
    runners = []
    for profile in policy.profiles:
        named = node_fit_profile(profile)
        for_profile = getattr(fit, "for_profile", None)
        own = for_profile(named) if named and for_profile is not None else fit
        handle = PluginHandle(ProfileEvictor(profile.name, evictor), cluster, own)
        deschedule, balance = build_profile(profile, registry, handle)
        runners.append((profile.name, deschedule, balance))
        for plugin in deschedule + balance:
            result.plugins[f"{profile.name}/{plugin.name}"] = plugin
    for point in ("deschedule", "balance"):
        for name, deschedule, balance in runners:
            for plugin in deschedule if point == "deschedule" else balance:
                started = time.perf_counter()
                error = getattr(plugin, point)(nodes)
                if on_plugin is not None:
                    on_plugin(plugin.name, name, time.perf_counter() - started)
                if error:
                    result.errors.append(
                        f'profile "{name}": plugin "{plugin.name}" finished with error: {error}'
                    )
    return evictor, result


__all__ = [
    "CycleResult",
    "FitCheck",
    "PluginHandle",
    "ProfileEvictor",
    "build_profile",
    "check_node_fit_profiles",
    "node_fit_profile",
    "run_cycle",
]
