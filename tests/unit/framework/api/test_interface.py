"""A plugin serves the extension points whose Protocols it names as bases and whose
methods it defines: a misspelt method leaves the Protocol's stub, so the point is not
served (and the plugin is not registered there)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from services.framework.api.events import ClusterEventWithHint
from services.framework.api.interface import (
    EnqueueExtensions,
    ExtensionPoint,
    FilterPlugin,
    FilterResult,
    QueueSortPlugin,
    ScorePlugin,
    implements,
)
from services.framework.api.registry import ConfigError, PluginEntry
from services.framework.config import PluginRef, Plugins, PluginSet, Profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.framework.runtime.profile import merge_plugins
from tests.unit.framework.fakes import FIT_ONLY

P = ExtensionPoint


class Filters(FilterPlugin, EnqueueExtensions):
    name = "Filters"

    def filter_all(self, *_: Any) -> FilterResult:
        raise AssertionError("not run here")

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return ()


class Misspelt(FilterPlugin, EnqueueExtensions):
    """``filter_al``: mypy calls this class abstract where it is instantiated."""

    name = "Misspelt"

    def filter_al(self, *_: Any) -> FilterResult:
        raise AssertionError("not run here")

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return ()


class Undeclared:
    """Has Filter's method but does not name FilterPlugin: not a Filter plugin."""

    name = "Undeclared"

    def filter_all(self, *_: Any) -> FilterResult:
        raise AssertionError("not run here")


class HalfQueueSort(QueueSortPlugin):
    """QueueSort needs ``less`` and ``sort_key``; this one lacks ``sort_key``."""

    name = "HalfQueueSort"

    def less(self, *_: Any) -> bool:
        return True


class FiltersAndScores(Filters, ScorePlugin):
    """Inherits its Filter from a base class, declares Score and misses score_all."""

    name = "FiltersAndScores"


@pytest.mark.parametrize(
    ("plugin", "point", "expected"),
    [
        (Filters, P.Filter, True),
        (Filters(), P.Filter, True),
        (Filters, P.Score, False),
        (Misspelt, P.Filter, False),
        (Misspelt(), P.Filter, False),
        (Undeclared, P.Filter, False),
        (HalfQueueSort, P.QueueSort, False),
        (FiltersAndScores, P.Filter, True),
        (FiltersAndScores, P.Score, False),
    ],
)
def test_implements_needs_the_protocol_base_and_every_method(plugin, point, expected):
    assert implements(plugin, point) is expected


def _framework(plugin_type: type, plugins: Plugins) -> Framework:
    name = plugin_type.name  # type: ignore[attr-defined]
    entry = PluginEntry(name, plugin_type, lambda _args, _handle: plugin_type())
    registry = {**in_tree_registry(), name: entry}
    return Framework(Profile(plugins=merge_plugins(FIT_ONLY, plugins)), registry)


@pytest.mark.parametrize(
    ("plugin_type", "registered"),
    [(Filters, True), (Misspelt, False), (Undeclared, False)],
)
def test_multi_point_registers_a_plugin_only_where_it_serves(plugin_type, registered):
    name = plugin_type.name
    framework = _framework(plugin_type, Plugins(multi_point=PluginSet((PluginRef(name),))))
    assert (name in framework.plugin_names(P.Filter)) is registered


@pytest.mark.parametrize("plugin_type", [Misspelt, Undeclared])
def test_enabling_a_misspelt_filter_at_filter_is_refused(plugin_type):
    name = plugin_type.name
    with pytest.raises(ConfigError, match=f'plugin "{name}" does not extend filter'):
        _framework(plugin_type, Plugins(filter=PluginSet((PluginRef(name),))))
