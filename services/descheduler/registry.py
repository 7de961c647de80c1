"""The descheduler's in-tree plugins (descheduler ``pluginregistry``), by name: each
plugin module's ``ENTRY``, as the scheduler framework's ``config/in_tree.py`` collects
its plugins'."""

from __future__ import annotations

from services.descheduler.api import PluginEntry, Registry
from services.descheduler.plugins import (
    defaultevictor,
    nodeaffinity,
    nodetaints,
    nodeutilization,
    podantiaffinity,
    podlifetime,
    removeduplicates,
    removefailedpods,
    toomanyrestarts,
    topologyspread,
)

ENTRIES: tuple[PluginEntry, ...] = (
    defaultevictor.ENTRY,
    removefailedpods.ENTRY,
    podlifetime.ENTRY,
    toomanyrestarts.ENTRY,
    nodetaints.ENTRY,
    nodeaffinity.ENTRY,
    nodeutilization.LOW_ENTRY,
    nodeutilization.HIGH_ENTRY,
    podantiaffinity.ENTRY,
    removeduplicates.ENTRY,
    topologyspread.ENTRY,
)


def in_tree_registry() -> Registry:
    """Every descheduler plugin ksched ships, by name."""
    return {entry.name: entry for entry in ENTRIES}


__all__ = ["ENTRIES", "in_tree_registry"]
