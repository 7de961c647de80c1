"""The in-tree registry is each plugin module's ENTRY, and every plugin declares the
Protocols of the points it serves, as the scheduler's plugins do."""

from __future__ import annotations

from services.descheduler.api import BalancePlugin, DeschedulePlugin, EvictorPlugin
from services.descheduler.registry import ENTRIES, in_tree_registry

POINTS = {
    DeschedulePlugin: {"deschedule"},
    BalancePlugin: {"balance"},
    EvictorPlugin: {"filter", "preEvictionFilter"},
}


def test_the_registry_holds_upstreams_plugins_once():
    assert sorted(in_tree_registry()) == [
        "DefaultEvictor",
        "HighNodeUtilization",
        "LowNodeUtilization",
        "PodLifeTime",
        "RemoveDuplicates",
        "RemoveFailedPods",
        "RemovePodsHavingTooManyRestarts",
        "RemovePodsViolatingInterPodAntiAffinity",
        "RemovePodsViolatingNodeAffinity",
        "RemovePodsViolatingNodeTaints",
        "RemovePodsViolatingTopologySpreadConstraint",
    ]
    assert len(ENTRIES) == len(in_tree_registry())


def test_every_plugin_declares_the_protocols_of_its_points():
    for entry in ENTRIES:
        declared = [points for protocol, points in POINTS.items() if protocol in entry.cls.__mro__]
        assert declared, f"{entry.name} declares no point"
        assert set().union(*declared) == entry.points(), entry.name
