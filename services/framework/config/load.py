"""``load_config``: a KubeSchedulerConfiguration file (or mapping) → :class:`SchedulerConfig`.

Decoding is strict and every problem is a :class:`ConfigError` naming the field path
(``profiles[0].plugins.filter.enabled[1].name``). Defaulting follows upstream's v1
rules: no profiles means one default profile, a single profile without a name is
``default-scheduler``, the default plugins are merged with the user's, and plugins
without a ``pluginConfig`` entry get their default args.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from contracts.k8s import DEFAULT_SCHEDULER_NAME
from services.framework.config.defaults import DEFAULT_PLUGINS, default_profile
from services.framework.config.v1 import (
    API_VERSION,
    KIND,
    KubeSchedulerConfigurationV1,
    KubeSchedulerProfileV1,
    PluginSetV1,
    PluginsV1,
)
from services.framework.interface import ExtensionPoint
from services.framework.plugins import in_tree_registry
from services.framework.profile import (
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    merge_plugins,
    resolve_plugins,
)
from services.framework.registry import ConfigError, Registry, convert_strict


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """The validated configuration, immutable once loaded."""

    profiles: tuple[Profile, ...]
    percentage_of_nodes_to_score: int | None = None
    """The global ``percentageOfNodesToScore`` (0-100, 0 adaptive); a profile that sets
    none inherits it. None: every feasible node is scored (ksched's default)."""
    pod_initial_backoff_seconds: float = 1.0
    """First backoff of an unschedulable pod, in seconds (upstream default 1)."""
    pod_max_backoff_seconds: float = 10.0
    """Backoff cap, in seconds (upstream default 10)."""


def load_config(
    source: str | Path | Mapping[str, Any], registry: Registry | None = None
) -> SchedulerConfig:
    """Load and validate; ``source`` is a YAML/JSON file path or an already parsed mapping."""
    registry = registry if registry is not None else in_tree_registry()
    raw: object = source
    if isinstance(source, str | Path):
        raw = yaml.safe_load(Path(source).read_text())
    if not isinstance(raw, Mapping):
        raise ConfigError("", "the configuration must be a mapping")
    config = convert_strict(raw, KubeSchedulerConfigurationV1, "")
    if config.api_version != API_VERSION:
        raise ConfigError(
            "apiVersion",
            f'Unsupported value: "{config.api_version}": supported values: "{API_VERSION}"',
        )
    if config.kind != KIND:
        raise ConfigError("kind", f'Unsupported value: "{config.kind}": supported values: "{KIND}"')
    _check_percentage(config.percentage_of_nodes_to_score, "percentageOfNodesToScore")
    initial = (
        config.pod_initial_backoff_seconds if config.pod_initial_backoff_seconds is not None else 1
    )
    maximum = config.pod_max_backoff_seconds if config.pod_max_backoff_seconds is not None else 10
    if initial <= 0:
        raise ConfigError(
            "podInitialBackoffSeconds", f"Invalid value: {initial}: must be greater than 0"
        )
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds",
            f"Invalid value: {maximum}: must be greater than or equal to PodInitialBackoffSeconds",
        )
    raw_profiles = config.profiles or [KubeSchedulerProfileV1()]
    single = len(raw_profiles) == 1
    profiles: list[Profile] = []
    for i, raw_profile in enumerate(raw_profiles):
        profile = _profile(
            raw_profile, f"profiles[{i}]", registry, single, config.percentage_of_nodes_to_score
        )
        if any(p.scheduler_name == profile.scheduler_name for p in profiles):
            raise ConfigError(
                f"profiles[{i}].schedulerName", f'Duplicate value: "{profile.scheduler_name}"'
            )
        _check_queue_sort(profiles, profile, f"profiles[{i}].plugins.queueSort", registry)
        profiles.append(profile)
    return SchedulerConfig(
        tuple(profiles), config.percentage_of_nodes_to_score, float(initial), float(maximum)
    )


def load_profiles(path: str | Path | None, registry: Registry | None = None) -> tuple[Profile, ...]:
    """The profiles of the configuration file at ``path``; the default profile when None."""
    if path is None:
        return (default_profile(),)
    return load_config(path, registry).profiles


def _profile(
    raw: KubeSchedulerProfileV1,
    path: str,
    registry: Registry,
    single: bool,
    percentage: int | None = None,
) -> Profile:
    """One profile; ``percentage`` is the global percentageOfNodesToScore, which the
    profile's own overrides (as upstream's ``numFeasibleNodesToFind`` picks)."""
    name = raw.scheduler_name
    if name is None and single:
        name = DEFAULT_SCHEDULER_NAME
    if not name:
        raise ConfigError(f"{path}.schedulerName", "Required value")
    _check_percentage(raw.percentage_of_nodes_to_score, f"{path}.percentageOfNodesToScore")
    custom = _plugins(raw.plugins, f"{path}.plugins", registry)
    args: dict[str, object] = {}
    for j, entry in enumerate(raw.plugin_config):
        where = f"{path}.pluginConfig[{j}]"
        if entry.name not in registry:
            raise ConfigError(f"{where}.name", f'Invalid value: "{entry.name}": unknown plugin')
        if entry.name in args:
            raise ConfigError(f"{where}.name", f'Duplicate value: "{entry.name}"')
        args[entry.name] = registry[entry.name].decode_args(entry.args, f"{where}.args")
    if raw.percentage_of_nodes_to_score is not None:
        percentage = raw.percentage_of_nodes_to_score
    profile = Profile(name, merge_plugins(DEFAULT_PLUGINS, custom), args, percentage)
    resolve_plugins(profile, registry, path)
    return profile


def _plugins(raw: PluginsV1 | None, path: str, registry: Registry) -> Plugins | None:
    if raw is None:
        return None
    sets: dict[str, PluginSet] = {}
    for point in (*ExtensionPoint, "multiPoint"):
        field = "".join("_" + c.lower() if c.isupper() else c for c in point)
        value: PluginSetV1 | None = getattr(raw, field)
        if value is not None:
            sets[field] = _plugin_set(value, f"{path}.{point}", registry)
    return Plugins(**sets)


def _plugin_set(raw: PluginSetV1, path: str, registry: Registry) -> PluginSet:
    for kind, refs in (("enabled", raw.enabled), ("disabled", raw.disabled)):
        for k, ref in enumerate(refs):
            if ref.name not in registry and not (kind == "disabled" and ref.name == "*"):
                raise ConfigError(
                    f"{path}.{kind}[{k}].name", f'Invalid value: "{ref.name}": unknown plugin'
                )
    return PluginSet(
        tuple(PluginRef(p.name, p.weight or 0) for p in raw.enabled),
        tuple(PluginRef(p.name) for p in raw.disabled),
    )


def _check_percentage(value: int | None, path: str) -> None:
    if value is not None and not 0 <= value <= 100:
        raise ConfigError(path, f"Invalid value: {value}: not in valid range [0-100]")


def _check_queue_sort(
    earlier: list[Profile], profile: Profile, path: str, registry: Registry
) -> None:
    """``validateCommonQueueSort``: every profile must sort the queue the same way."""
    if not earlier:
        return
    first = earlier[0]
    mine = resolve_plugins(profile, registry).points[ExtensionPoint.QueueSort]
    theirs = resolve_plugins(first, registry).points[ExtensionPoint.QueueSort]
    if mine != theirs or first.plugin_args.get(mine[0]) != profile.plugin_args.get(mine[0]):
        raise ConfigError(
            path, f"Invalid value: {list(mine)}: queueSort must be the same for all profiles"
        )
