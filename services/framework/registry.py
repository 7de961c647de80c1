"""The plugin registry: plugin name → how to build it and decode its args.

Args are msgspec Structs decoded strictly (unknown fields are errors, as upstream's
strict decoding), then defaulted and validated; every failure is a
:class:`ConfigError` naming the field path in the configuration file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Self, TypeVar

import msgspec

from services.framework.interface import Handle, Plugin

T = TypeVar("T")
_AT = re.compile(r"^(?P<reason>.*?)(?: - at `\$(?P<path>[^`]*)`)?$")
_FIELD_PROBLEMS = {
    re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`$"): "unknown field",
    re.compile(r"^Object missing required field `(?P<name>[^`]*)`$"): "Required value",
}


class ConfigError(ValueError):
    """A configuration problem at ``field`` (``profiles[0].plugins.filter.enabled[1]``)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason


def join_path(prefix: str, child: str) -> str:
    """``join_path("a", "b") == "a.b"``, ``join_path("a", "[0]") == "a[0]"``."""
    if not prefix:
        return child.lstrip(".")
    if not child or child.startswith("["):
        return prefix + child
    return f"{prefix}.{child.lstrip('.')}"


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
        if self.args_type is None:
            if raw:
                raise ConfigError(path, f"plugin {self.name} takes no args")
            return None
        fields = dict(raw or {})
        fields.pop("apiVersion", None)
        kind = fields.pop("kind", None)
        if kind is not None and kind != f"{self.name}Args":
            raise ConfigError(join_path(path, "kind"), f'must be "{self.name}Args", not "{kind}"')
        args = convert_strict(fields, self.args_type, path).defaulted()
        args.validate(path)
        return args


Registry = Mapping[str, PluginEntry]
