"""A scheduling profile and how its plugin lists are resolved, as upstream does.

Two steps, both upstream's:

1. ``merge_plugins(default, custom)`` (config defaulting, ``mergePluginSet``): per
   extension point, the default plugins minus the disabled ones (``*`` disables all),
   a default re-enabled by the user is replaced in place (its weight may change), and
   the user's other plugins are appended.
2. :func:`resolve_plugins` (``NewFramework``): each point's own ``enabled`` list, then
   the ``multiPoint`` plugins expanded to every point they implement unless disabled
   there; a plugin enabled at a point and in multiPoint keeps its explicit place
   first. Score weights: a plugin's ``score`` weight wins over its ``multiPoint``
   weight, 0 means 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from contracts.k8s import DEFAULT_SCHEDULER_NAME
from services.framework.api.interface import ExtensionPoint, implements
from services.framework.api.registry import ConfigError, Registry, join_path, missing_plugin
from services.framework.api.types import MAX_NODE_SCORE, MAX_TOTAL_SCORE


@dataclass(frozen=True, slots=True)
class PluginRef:
    name: str
    weight: int = 0
    """Score weight; 0 means 1. Only meaningful at score and multiPoint."""


@dataclass(frozen=True, slots=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()


@dataclass(frozen=True, slots=True)
class Plugins:
    """``plugins`` of a profile: one PluginSet per extension point, plus multiPoint."""

    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    multi_point: PluginSet = PluginSet()

    def at(self, point: ExtensionPoint) -> PluginSet:
        return getattr(self, _FIELD[point])  # type: ignore[no-any-return]


_FIELD = {
    p: "".join("_" + c.lower() if c.isupper() else c for c in p.value) for p in ExtensionPoint
}
_ALL_FIELDS = tuple(f.name for f in fields(Plugins))


@dataclass(frozen=True, slots=True)
class Profile:
    """One ``profiles[]`` entry, defaulted and validated: immutable settings a
    Framework is built from."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    plugins: Plugins = Plugins()
    """Already merged with the default plugins (see :func:`merge_plugins`)."""
    plugin_args: Mapping[str, object] = field(default_factory=dict)
    """Plugin name → decoded args (``NodeResourcesFitArgs``); absent means defaults."""
    percentage_of_nodes_to_score: int | None = None
    """``percentageOfNodesToScore`` in effect for this profile (its own, else the
    global one), 0-100; 0 is upstream's adaptive percentage. None (neither is set):
    every feasible node is scored, ksched's default (see framework.sampling)."""


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """``mergePluginSet``."""
    disabled = custom.disabled + default.disabled
    off = {p.name for p in disabled}
    overrides = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in off:
        for plugin in default.enabled:
            if plugin.name in off:
                continue
            if plugin.name in overrides:
                index, plugin = overrides[plugin.name]
                replaced.add(index)
            enabled.append(plugin)
    enabled += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(tuple(enabled), tuple(PluginRef(p.name) for p in disabled))


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    if custom is None:
        return default
    merged = {
        name: merge_plugin_set(getattr(default, name), getattr(custom, name))
        for name in _ALL_FIELDS
    }
    return Plugins(**merged)


@dataclass(frozen=True, slots=True)
class ResolvedPlugins:
    """The plugin names per extension point, in the order they run, and score weights."""

    points: Mapping[ExtensionPoint, tuple[str, ...]]
    score_weights: Mapping[str, int]
    needed: tuple[str, ...]


def resolve_plugins(profile: Profile, registry: Registry, path: str = "") -> ResolvedPlugins:
    """Raises ConfigError for unknown (or not implemented) plugins, plugins at points
    they do not implement, double registration, a missing/extra queue sort or a
    missing bind plugin."""
    plugins, ppath = profile.plugins, join_path(path, "plugins")
    needed: list[str] = []
    for name in _ALL_FIELDS:
        for i, ref in enumerate(getattr(plugins, name).enabled):
            if ref.name not in registry:
                raise missing_plugin(
                    ref.name, join_path(ppath, f"{_camel(name)}.enabled[{i}].name")
                )
            if ref.name not in needed:
                needed.append(ref.name)
    points = {p: _expand(p, plugins, registry, join_path(ppath, p.value)) for p in ExtensionPoint}
    if len(points[ExtensionPoint.QueueSort]) != 1:
        many = len(points[ExtensionPoint.QueueSort]) > 1
        reason = (
            "only one queue sort plugin can be enabled"
            if many
            else "no queue sort plugin is enabled"
        )
        raise ConfigError(join_path(ppath, "queueSort"), reason)
    if not points[ExtensionPoint.Bind]:
        raise ConfigError(join_path(ppath, "bind"), "at least one bind plugin is needed")
    weights = _score_weights(plugins.score.enabled + plugins.multi_point.enabled, registry, ppath)
    return ResolvedPlugins(points, weights, tuple(needed))


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.title() for word in rest)


def _expand(
    point: ExtensionPoint, plugins: Plugins, registry: Registry, path: str
) -> tuple[str, ...]:
    own: list[str] = []
    for ref in plugins.at(point).enabled:
        if not implements(registry[ref.name].plugin_type, point):
            raise ConfigError(path, f'plugin "{ref.name}" does not extend {point.value}')
        if ref.name in own:
            raise ConfigError(path, f'plugin "{ref.name}" already registered at {point.value}')
        own.append(ref.name)
    disabled = {p.name for p in plugins.at(point).disabled}
    if "*" in disabled:
        return tuple(own)
    overridden: set[str] = set()
    multi: list[str] = []
    for ref in plugins.multi_point.enabled:
        if not implements(registry[ref.name].plugin_type, point) or ref.name in disabled:
            continue
        if ref.name in own:
            overridden.add(ref.name)
            continue
        if ref.name in multi:
            raise ConfigError(path, f'plugin "{ref.name}" already registered at {point.value}')
        multi.append(ref.name)
    first = [n for n in own if n in overridden]
    return (*first, *multi, *(n for n in own if n not in overridden))


def _score_weights(refs: tuple[PluginRef, ...], registry: Registry, path: str) -> dict[str, int]:
    """``getScoreWeights``."""
    weights: dict[str, int] = {}
    total = 0
    for ref in refs:
        if (
            not implements(registry[ref.name].plugin_type, ExtensionPoint.Score)
            or ref.name in weights
        ):
            continue
        if ref.weight < 0:
            raise ConfigError(
                path, f'Invalid value: {ref.weight}: weight of "{ref.name}" must not be negative'
            )
        weights[ref.name] = ref.weight or 1
        if weights[ref.name] * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise ConfigError(path, "total score of Score plugins could overflow")
        total += weights[ref.name] * MAX_NODE_SCORE
    return weights
