"""The in-tree plugins, one module each, named after upstream's."""

from __future__ import annotations

from services.scheduler.framework.registry import PluginEntry, Registry
from services.scheduler.plugins import defaultbinder
from services.scheduler.plugins.noderesources import fit
from services.scheduler.plugins.noderesources.args import NodeResourcesFitArgs
from services.scheduler.plugins.queuesort import priority_sort


def in_tree_registry() -> Registry:
    """Every plugin ksched ships, by name."""
    entries = (
        PluginEntry(priority_sort.NAME, priority_sort.PrioritySort, priority_sort.new),
        PluginEntry(fit.NAME, fit.Fit, fit.new, NodeResourcesFitArgs),
        PluginEntry(defaultbinder.NAME, defaultbinder.DefaultBinder, defaultbinder.new),
    )
    return {entry.name: entry for entry in entries}
