"""The in-tree registry (upstream's ``plugins/registry.go`` ``NewInTreeRegistry``): every
plugin ksched ships, by name (upstream's, and ksched's own: ExternalPermit, and
Coscheduling from scheduler-plugins). It sits in config, above the runtime, so the runtime never
names a plugin: whoever builds a Framework hands it a registry."""

from __future__ import annotations

from services.framework.api.registry import PluginEntry, Registry
from services.framework.plugins import (
    coscheduling,
    defaultbinder,
    defaultpreemption,
    dynamicresources,
    externalpermit,
    gangscheduling,
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
from services.framework.plugins.queuesort import priority_sort, qos_sort

ENTRIES: tuple[PluginEntry, ...] = (
    schedulinggates.ENTRY,
    priority_sort.ENTRY,
    qos_sort.ENTRY,
    nodeunschedulable.ENTRY,
    nodename.ENTRY,
    tainttoleration.ENTRY,
    node_affinity.ENTRY,
    nodeports.ENTRY,
    fit.ENTRY,
    volumerestrictions.ENTRY,
    nodevolumelimits.ENTRY,
    volumebinding.ENTRY,
    volumezone.ENTRY,
    podtopologyspread.ENTRY,
    interpodaffinity.ENTRY,
    balanced_allocation.ENTRY,
    imagelocality.ENTRY,
    dynamicresources.ENTRY,
    defaultpreemption.ENTRY,
    defaultbinder.ENTRY,
    externalpermit.ENTRY,
    coscheduling.ENTRY,
    gangscheduling.ENTRY,
)


def in_tree_registry() -> Registry:
    """Every plugin ksched ships, by name."""
    return {entry.name: entry for entry in ENTRIES}
