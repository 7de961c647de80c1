"""``load_config``: a KubeSchedulerConfiguration file (or mapping) → :class:`SchedulerConfig`.

Decoding is strict and every problem is one :class:`ConfigError` naming the file, the
line and the field path (``config.yaml:12: profiles[0].plugins.filter.enabled[1].name:
…``). Defaulting follows upstream's v1 rules: no profiles means one default profile, a
single profile without a name is ``default-scheduler``, the default plugins are merged
with the user's, and plugins without a ``pluginConfig`` entry get their default args.
Fields that mean nothing to ksched are validated, then ignored with one warning each
on logger ``ksched.config`` (see :mod:`.ignored`).

Upstream in-tree plugins ksched does not implement (NodeDeclaredFeatures…) may be
disabled, so real configurations load; enabling one is refused as "not implemented
in ksched".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from contracts.k8s import DEFAULT_SCHEDULER_NAME
from services.framework.api.interface import ExtensionPoint
from services.framework.api.registry import (
    ConfigError,
    PluginArgs,
    Registry,
    convert_strict,
    decode_args,
    is_not_implemented,
    missing_plugin,
)
from services.framework.config.defaults import default_plugins, default_profile
from services.framework.config.ignored import WHY_IGNORED, check_ignored
from services.framework.config.in_tree import in_tree_registry
from services.framework.config.source import Source, check_type_meta, read_source
from services.framework.config.v1 import (
    API_VERSION,
    KIND,
    KubeSchedulerConfigurationV1,
    KubeSchedulerProfileV1,
    PluginSetV1,
    PluginsV1,
)
from services.framework.runtime.profile import (
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    merge_plugins,
    resolve_plugins,
)

logger = logging.getLogger("ksched.config")

NOT_IMPLEMENTED_ARGS: Final[Mapping[str, type[PluginArgs]]] = {}
"""Args of upstream plugins ksched does not implement yet, decoded and validated so
that configurations tuning them load. Args of the other unimplemented plugins are
refused: ksched cannot check them."""
PLACEMENT_POINTS: Final = (
    "placementGenerate",
    "placementScore",
    "placementFeasible",
    "podGroupPostFilter",
)


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
    """Load and validate; ``source`` is a YAML/JSON file path or an already parsed
    mapping. Raises ConfigError whose message names the file, line and field."""
    registry = registry if registry is not None else in_tree_registry()
    where = Source()
    raw: object = source
    if isinstance(source, str | Path):
        raw, where = read_source(source)
    notes: list[tuple[str, str]] = []
    try:
        config = _config(raw, registry, notes)
    except ConfigError as error:
        raise where.locate(error) from None
    for field, why in sorted(notes, key=lambda note: where.line_of(note[0]) or 0):
        logger.warning("%s", where.locate(ConfigError(field, f"ignored: {why}")))
    return config


def _config(raw: object, registry: Registry, notes: list[tuple[str, str]]) -> SchedulerConfig:
    if not isinstance(raw, Mapping):
        raise ConfigError("", "the configuration must be a mapping")
    config = convert_strict(raw, KubeSchedulerConfigurationV1, "")
    check_type_meta(config.api_version, config.kind, want_version=API_VERSION, want_kind=KIND)
    notes += check_ignored(config)
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
        path = f"profiles[{i}]"
        profile = _profile(
            raw_profile, path, registry, single, config.percentage_of_nodes_to_score, notes
        )
        if raw_profile.percentage_of_placements_to_score is not None:
            _check_percentage(
                raw_profile.percentage_of_placements_to_score,
                f"{path}.percentageOfPlacementsToScore",
            )
            notes.append(
                (
                    f"{path}.percentageOfPlacementsToScore",
                    WHY_IGNORED["percentageOfPlacementsToScore"],
                )
            )
        if any(p.scheduler_name == profile.scheduler_name for p in profiles):
            raise ConfigError(
                f"{path}.schedulerName", f'Duplicate value: "{profile.scheduler_name}"'
            )
        _check_queue_sort(profiles, profile, f"{path}.plugins.queueSort", registry)
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
    notes: list[tuple[str, str]] | None = None,
) -> Profile:
    """One profile; ``percentage`` is the global percentageOfNodesToScore, which the
    profile's own overrides (as upstream's ``numFeasibleNodesToFind`` picks)."""
    name = raw.scheduler_name
    if name is None and single:
        name = DEFAULT_SCHEDULER_NAME
    if not name:
        raise ConfigError(f"{path}.schedulerName", "Required value")
    _check_percentage(raw.percentage_of_nodes_to_score, f"{path}.percentageOfNodesToScore")
    custom = _plugins(raw.plugins, f"{path}.plugins", registry, notes)
    args: dict[str, object] = {}
    for j, entry in enumerate(raw.plugin_config):
        where = f"{path}.pluginConfig[{j}]"
        if entry.name in args:
            raise ConfigError(f"{where}.name", f'Duplicate value: "{entry.name}"')
        args[entry.name] = _plugin_args(entry.name, entry.args, where, registry)
    if raw.percentage_of_nodes_to_score is not None:
        percentage = raw.percentage_of_nodes_to_score
    profile = Profile(name, merge_plugins(default_plugins(), custom), args, percentage)
    resolve_plugins(profile, registry, path)
    return profile


def _plugin_args(
    name: str, raw: Mapping[str, Any] | None, where: str, registry: Registry
) -> object | None:
    """One ``pluginConfig`` entry's args, decoded by the plugin's registry entry; for an
    upstream plugin ksched does not implement, by :data:`NOT_IMPLEMENTED_ARGS`."""
    if name in registry:
        return registry[name].decode_args(raw, f"{where}.args")
    if not is_not_implemented(name, registry):
        raise missing_plugin(name, f"{where}.name")
    if name in NOT_IMPLEMENTED_ARGS:
        return decode_args(name, NOT_IMPLEMENTED_ARGS[name], raw, f"{where}.args")
    if raw:
        raise ConfigError(
            f"{where}.args",
            f"not supported: {name} is not implemented in ksched, so its args cannot be checked",
        )
    return None


def _plugins(
    raw: PluginsV1 | None,
    path: str,
    registry: Registry,
    notes: list[tuple[str, str]] | None = None,
) -> Plugins | None:
    if raw is None:
        return None
    sets: dict[str, PluginSet] = {}
    for point in (*ExtensionPoint, "multiPoint", *PLACEMENT_POINTS):
        field = "".join("_" + c.lower() if c.isupper() else c for c in point)
        value: PluginSetV1 | None = getattr(raw, field)
        if value is None:
            continue
        if point in PLACEMENT_POINTS and value.enabled:
            raise ConfigError(
                f"{path}.{point}.enabled[0].name",
                f'Invalid value: "{value.enabled[0].name}": not supported: ksched has no '
                "placement (workload) scheduling",
            )
        plugin_set = _plugin_set(value, f"{path}.{point}", registry, notes)
        if point not in PLACEMENT_POINTS:
            sets[field] = plugin_set
    return Plugins(**sets)


def _plugin_set(
    raw: PluginSetV1, path: str, registry: Registry, notes: list[tuple[str, str]] | None = None
) -> PluginSet:
    """Enabled plugins must be registered. Disabling a name no scheduler knows changes
    nothing, and upstream accepts it silently; ksched accepts it with a warning, since
    it is most likely a typo (or an out-of-tree plugin of another scheduler)."""
    for k, ref in enumerate(raw.enabled):
        if ref.name not in registry:
            raise missing_plugin(ref.name, f"{path}.enabled[{k}].name")
    for k, ref in enumerate(raw.disabled):
        known = ref.name in registry or ref.name == "*" or is_not_implemented(ref.name, registry)
        if not known and notes is not None:
            notes.append((f"{path}.disabled[{k}].name", f"{ref.name!r} is not a known plugin"))
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
