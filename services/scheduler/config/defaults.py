"""Upstream's v1 defaults for the plugins ksched implements (``getDefaultPlugins``).

Upstream's default multiPoint list, restricted to the plugins ksched has today, in
upstream's order: PrioritySort, NodeResourcesFit (score weight 1), DefaultBinder.
"""

from __future__ import annotations

from typing import Final

from contracts.k8s import DEFAULT_SCHEDULER_NAME
from services.scheduler.framework.profile import PluginRef, Plugins, PluginSet, Profile
from services.scheduler.plugins import defaultbinder
from services.scheduler.plugins.noderesources import fit
from services.scheduler.plugins.queuesort import priority_sort

DEFAULT_PLUGINS: Final = Plugins(
    multi_point=PluginSet(
        enabled=(
            PluginRef(priority_sort.NAME),
            PluginRef(fit.NAME, weight=1),
            PluginRef(defaultbinder.NAME),
        )
    )
)


def default_profile(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Profile:
    """The profile kube-scheduler runs when given no configuration (as far as ksched's
    plugins go)."""
    return Profile(scheduler_name=scheduler_name, plugins=DEFAULT_PLUGINS)
