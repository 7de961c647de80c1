"""The in-tree plugins, one module each, named after upstream's."""

from __future__ import annotations

from services.framework.plugins import (
    defaultbinder,
    imagelocality,
    interpodaffinity,
    nodename,
    nodeports,
    nodeunschedulable,
    nodevolumelimits,
    podtopologyspread,
    schedulinggates,
    tainttoleration,
    volumebinding,
    volumerestrictions,
    volumezone,
)
from services.framework.plugins.nodeaffinity import node_affinity
from services.framework.plugins.noderesources import balanced_allocation, fit
from services.framework.plugins.noderesources.args import NodeResourcesFitArgs
from services.framework.plugins.queuesort import priority_sort, qos_sort
from services.framework.registry import PluginEntry, Registry

ENTRIES: tuple[PluginEntry, ...] = (
    schedulinggates.ENTRY,
    PluginEntry(priority_sort.NAME, priority_sort.PrioritySort, priority_sort.new),
    qos_sort.ENTRY,
    nodeunschedulable.ENTRY,
    nodename.ENTRY,
    tainttoleration.ENTRY,
    node_affinity.ENTRY,
    nodeports.ENTRY,
    PluginEntry(fit.NAME, fit.Fit, fit.new, NodeResourcesFitArgs),
    volumerestrictions.ENTRY,
    nodevolumelimits.ENTRY,
    volumebinding.ENTRY,
    volumezone.ENTRY,
    podtopologyspread.ENTRY,
    interpodaffinity.ENTRY,
    balanced_allocation.ENTRY,
    imagelocality.ENTRY,
    PluginEntry(defaultbinder.NAME, defaultbinder.DefaultBinder, defaultbinder.new),
)


def in_tree_registry() -> Registry:
    """Every plugin ksched ships, by name."""
    return {entry.name: entry for entry in ENTRIES}
