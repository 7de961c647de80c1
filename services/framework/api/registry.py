"""The plugin registry: plugin name → how to build it and decode its args.

Args are msgspec Structs decoded strictly (unknown fields are errors, as upstream's
strict decoding), then defaulted and validated; every failure is a
:class:`ConfigError` naming the field path in the configuration file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, Self, TypeVar

import msgspec

from services.common.k8s.validation import join_path as join_path
from services.framework.api.interface import Handle, Plugin

T = TypeVar("T")
_AT = re.compile(r"^(?P<reason>.*?)(?: - at `\$(?P<path>[^`]*)`)?$")
_FIELD_PROBLEMS = {
    re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`$"): "unknown field",
    re.compile(r"^Object missing required field `(?P<name>[^`]*)`$"): "Required value",
}


class ConfigError(ValueError):
    """A configuration problem at ``field`` (``profiles[0].plugins.filter.enabled[1]``).

    Raised deep in decoding with the field path only; :func:`load_config` then places
    it in the file (``located``), so the message alone tells the user where to look:
    ``config.yaml:12: profiles[0].pluginConfig[1].args.foo: unknown field``.
    """

    def __init__(
        self,
        field: str,
        reason: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.field = field
        self.reason = reason
        self.file = file
        """The configuration file, as the user named it; None for an in-memory mapping."""
        self.line = line
        """1-based line of the field (or of its closest enclosing field) where known."""
        self.column = column
        """1-based column, for YAML syntax errors."""
        where = ":".join(str(part) for part in (file, line, column) if part is not None)
        super().__init__(": ".join(part for part in (where, field, reason) if part))

    def located(self, file: str | None, line: int | None, column: int | None = None) -> ConfigError:
        """The same error, placed at ``file:line[:column]``."""
        return ConfigError(self.field, self.reason, file=file, line=line, column=column)


def convert_strict(raw: object, kind: type[T], path: str) -> T:
    """Decode ``raw`` (parsed YAML/JSON) into ``kind``, or raise ConfigError at the
    offending field under ``path``."""
    try:
        return msgspec.convert(raw, type=kind)
    except msgspec.ValidationError as err:
        match = _AT.match(str(err))
        assert match is not None  # the pattern matches any message
        field, reason = join_path(path, match["path"] or ""), match["reason"]
        for pattern, problem in _FIELD_PROBLEMS.items():
            named = pattern.match(reason)
            if named is not None:
                field, reason = join_path(field, named["name"]), problem
        raise ConfigError(field, reason) from None


class PluginArgs(Protocol):
    """What a plugin's args Struct provides besides its fields."""

    def defaulted(self) -> Self:
        """The args with upstream's v1 defaults filled in."""
        ...

    def validate(self, path: str) -> None:
        """Raise ConfigError (field under ``path``) if the args are invalid."""
        ...


PluginFactory = Callable[[Any, Handle], Plugin]
"""``factory(args, handle)``: args is the plugin's decoded args (None if it has none)."""


@dataclass(frozen=True, slots=True)
class PluginEntry:
    name: str
    plugin_type: type
    """The plugin class: its methods tell which extension points it serves."""
    factory: PluginFactory
    args_type: type[PluginArgs] | None = None
    """The plugin's args Struct (``NodeResourcesFitArgs``); None if it takes none."""

    def decode_args(self, raw: Mapping[str, Any] | None, path: str) -> object | None:
        """Typed, defaulted, validated args from a ``pluginConfig[].args`` mapping
        (``apiVersion`` / ``kind`` may be given; kind must be ``<Name>Args``).
        ``raw=None`` yields the defaults."""
        return decode_args(self.name, self.args_type, raw, path)


def decode_args(
    name: str, args_type: type[PluginArgs] | None, raw: Mapping[str, Any] | None, path: str
) -> object | None:
    """:meth:`PluginEntry.decode_args` for plugin ``name`` whose args Struct is
    ``args_type`` (None: it takes none)."""
    if args_type is None:
        if raw:
            raise ConfigError(path, f"plugin {name} takes no args")
        return None
    fields = dict(raw or {})
    fields.pop("apiVersion", None)
    kind = fields.pop("kind", None)
    if kind is not None and kind != f"{name}Args":
        raise ConfigError(join_path(path, "kind"), f'must be "{name}Args", not "{kind}"')
    args = convert_strict(fields, args_type, path).defaulted()
    args.validate(path)
    return args


Registry = Mapping[str, PluginEntry]

UPSTREAM_IN_TREE_PLUGINS: Final = frozenset(
    {
        "DefaultBinder",
        "DefaultPreemption",
        "DynamicResources",
        "GangScheduling",
        "ImageLocality",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeDeclaredFeatures",
        "NodeName",
        "NodePorts",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "NodeUnschedulable",
        "NodeVolumeLimits",
        "PodGroupPodsCount",
        "PodTopologySpread",
        "PrioritySort",
        "SchedulingGates",
        "TaintToleration",
        "TopologyPlacementGenerator",
        "VolumeBinding",
        "VolumeRestrictions",
        "VolumeZone",
    }
)
"""Every plugin of upstream's ``NewInTreeRegistry`` (plugins/registry.go). A name here
that a registry lacks is "not implemented in ksched", not unknown: disabling it is
accepted, enabling it is refused. Registering the plugin is all it takes to accept it."""

INVALID_IN_V1: Final = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})
"""Plugins upstream's validation refuses in v1 (``invalidPluginsByVersion``)."""


def is_not_implemented(name: str, registry: Registry) -> bool:
    """An upstream in-tree plugin this registry does not provide (yet)."""
    return name in UPSTREAM_IN_TREE_PLUGINS and name not in registry


def missing_plugin(name: str, field: str) -> ConfigError:
    """The error for enabling (or configuring) ``name``, absent from the registry."""
    if name in INVALID_IN_V1:
        version = "kubescheduler.config.k8s.io/v1"
        return ConfigError(
            field,
            f'Invalid value: "{name}": was invalid in version "{version}" '
            f'(KubeSchedulerConfiguration is version "{version}")',
        )
    if name in UPSTREAM_IN_TREE_PLUGINS:
        return ConfigError(field, f'Invalid value: "{name}": not implemented in ksched')
    return ConfigError(field, f'Invalid value: "{name}": unknown plugin')
