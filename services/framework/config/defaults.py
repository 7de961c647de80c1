"""Upstream's v1 default plugins (``getDefaultPlugins`` in default_plugins.go).

The multiPoint list in upstream's order, with its score weights. DynamicResources is on
(its gate, DynamicResourceAllocation, is GA and locked on): ``applyFeatureGates`` puts it
just before DefaultPreemption, so that PostFilter frees an idle ResourceClaim before it
evicts a pod.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from contracts.k8s import DEFAULT_SCHEDULER_NAME
from services.common import features
from services.framework.runtime.profile import PluginRef, Plugins, PluginSet, Profile

DEFAULT_PLUGINS: Final = Plugins(
    multi_point=PluginSet(
        enabled=(
            PluginRef("SchedulingGates"),
            PluginRef("PrioritySort"),
            PluginRef("NodeUnschedulable"),
            PluginRef("NodeName"),
            PluginRef("TaintToleration", weight=3),
            PluginRef("NodeAffinity", weight=2),
            PluginRef("NodePorts"),
            PluginRef("NodeResourcesFit", weight=1),
            PluginRef("VolumeRestrictions"),
            PluginRef("NodeVolumeLimits"),
            PluginRef("VolumeBinding"),
            PluginRef("VolumeZone"),
            PluginRef("PodTopologySpread", weight=2),
            PluginRef("InterPodAffinity", weight=2),
            PluginRef("DynamicResources"),
            PluginRef("DefaultPreemption"),
            PluginRef("NodeResourcesBalancedAllocation", weight=1),
            PluginRef("ImageLocality", weight=1),
            PluginRef("DefaultBinder"),
        )
    )
)


def default_profile(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Profile:
    """The profile kube-scheduler runs when given no configuration."""
    return Profile(scheduler_name=scheduler_name, plugins=default_plugins())


def default_plugins() -> Plugins:
    """DEFAULT_PLUGINS with the feature-gated ones whose gates are on
    (``applyFeatureGates``)."""
    plugins = DEFAULT_PLUGINS
    if features.enabled("GangScheduling") and features.enabled("GenericWorkload"):
        enabled = (*plugins.multi_point.enabled, PluginRef("GangScheduling"))
        plugins = replace(plugins, multi_point=replace(plugins.multi_point, enabled=enabled))
    return plugins
