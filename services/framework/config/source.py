"""A configuration file as read: parsed YAML/JSON plus the line of every field.

Decoding errors name fields by path (``profiles[0].pluginConfig[1].args.foo``);
:class:`Source` turns such a path back into ``config.yaml:12`` using the YAML node
marks, so every message names the file and the line. A field the file does not
spell out (a defaulted one) takes the line of its closest enclosing field.
:func:`check_type_meta` checks a document's ``apiVersion`` and ``kind``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from services.framework.api.registry import ConfigError, join_path


@dataclass(frozen=True, slots=True)
class Source:
    """Where a configuration came from: a file name (None for an in-memory mapping)
    and field path → 1-based line."""

    name: str | None = None
    lines: Mapping[str, int] = field(default_factory=dict)

    def line_of(self, path: str) -> int | None:
        """The line of ``path``, else of its closest enclosing field, else None."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path[: max(path.rfind("."), path.rfind("["), 0)]

    def locate(self, error: ConfigError) -> ConfigError:
        """``error`` placed in this file (unchanged when it is already placed)."""
        if error.file is not None or self.name is None:
            return error
        return error.located(self.name, self.line_of(error.field))


def check_type_meta(api_version: str, kind: str, *, want_version: str, want_kind: str) -> None:
    """A document's ``apiVersion`` and ``kind`` must be the ones its loader reads:
    ConfigError (``apiVersion`` first) with the API's "Unsupported value" text."""
    if api_version != want_version:
        raise ConfigError(
            "apiVersion",
            f'Unsupported value: "{api_version}": supported values: "{want_version}"',
        )
    if kind != want_kind:
        raise ConfigError("kind", f'Unsupported value: "{kind}": supported values: "{want_kind}"')


def read_source(path: str | Path) -> tuple[object, Source]:
    """Parse the YAML (or JSON) file at ``path``; ConfigError, never a traceback, when
    it cannot be read or is not valid YAML (``config.yaml:3:5: not valid YAML: …``)."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ConfigError("", f"cannot read the configuration: {reason}", file=name) from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "cannot parse"
        if err.context and err.problem and err.problem.startswith("but "):
            # A second document: "expected a single document in the stream, but …"
            problem = f"{err.context}, {err.problem}"
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        raise ConfigError(
            "", f"not valid YAML: {problem}", file=name, line=line, column=column
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError("", f"not valid YAML: {err}", file=name) from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if node is not None:
        _record(node, "", lines, set())
    return data, Source(name, lines)


def _record(node: yaml.Node, path: str, lines: dict[str, int], open_: set[int]) -> None:
    """Lines of ``node`` and its children; ``open_`` guards against recursive aliases."""
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in open_:
        return
    open_.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                child = join_path(path, str(key.value))
                lines.setdefault(child, key.start_mark.line + 1)
                _record(value, child, lines, open_)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record(item, f"{path}[{index}]", lines, open_)
    open_.discard(id(node))
