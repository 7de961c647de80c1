"""The descheduler's in-tree plugins (descheduler ``pluginregistry``), by name."""

from __future__ import annotations

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
from services.descheduler.policy import PluginEntry, Registry


def in_tree_registry() -> Registry:
    entries = [
        PluginEntry(
            defaultevictor.NAME,
            defaultevictor.DefaultEvictorArgs,
            defaultevictor.new,
            defaultevictor.DefaultEvictor,
        ),
        PluginEntry(
            removefailedpods.NAME,
            removefailedpods.RemoveFailedPodsArgs,
            removefailedpods.new,
            removefailedpods.RemoveFailedPods,
        ),
        PluginEntry(
            podlifetime.NAME, podlifetime.PodLifeTimeArgs, podlifetime.new, podlifetime.PodLifeTime
        ),
        PluginEntry(
            toomanyrestarts.NAME,
            toomanyrestarts.RemovePodsHavingTooManyRestartsArgs,
            toomanyrestarts.new,
            toomanyrestarts.RemovePodsHavingTooManyRestarts,
        ),
        PluginEntry(
            nodetaints.NAME,
            nodetaints.RemovePodsViolatingNodeTaintsArgs,
            nodetaints.new,
            nodetaints.RemovePodsViolatingNodeTaints,
        ),
        PluginEntry(
            nodeaffinity.NAME,
            nodeaffinity.RemovePodsViolatingNodeAffinityArgs,
            nodeaffinity.new,
            nodeaffinity.RemovePodsViolatingNodeAffinity,
        ),
        PluginEntry(
            nodeutilization.LOW,
            nodeutilization.LowNodeUtilizationArgs,
            nodeutilization.new_low,
            nodeutilization.LowNodeUtilization,
        ),
        PluginEntry(
            nodeutilization.HIGH,
            nodeutilization.HighNodeUtilizationArgs,
            nodeutilization.new_high,
            nodeutilization.HighNodeUtilization,
        ),
        PluginEntry(
            podantiaffinity.NAME,
            podantiaffinity.RemovePodsViolatingInterPodAntiAffinityArgs,
            podantiaffinity.new,
            podantiaffinity.RemovePodsViolatingInterPodAntiAffinity,
        ),
        PluginEntry(
            removeduplicates.NAME,
            removeduplicates.RemoveDuplicatesArgs,
            removeduplicates.new,
            removeduplicates.RemoveDuplicates,
        ),
        PluginEntry(
            topologyspread.NAME,
            topologyspread.RemovePodsViolatingTopologySpreadConstraintArgs,
            topologyspread.new,
            topologyspread.RemovePodsViolatingTopologySpreadConstraint,
        ),
    ]
    return {e.name: e for e in entries}


__all__ = ["in_tree_registry"]
