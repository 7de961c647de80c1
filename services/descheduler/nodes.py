"""Nodes as the descheduler sees them (descheduler ``pkg/descheduler/node``): Ready
nodes, the policy's ``nodeSelector`` (a label selector string, ``kubectl -l`` syntax)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from contracts.k8s import Node

_SET: Final = re.compile(
    r"^\s*(!?)([^\s!=,()]+)\s*(?:(in|notin)\s*\(([^)]*)\)|(==|=|!=)\s*([^\s,]*))?\s*$"
)


class SelectorError(ValueError):
    """A label selector string that does not parse."""


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def parse_selector(text: str) -> list[tuple[str, str, frozenset[str]]]:
    """``labels.Parse``: (key, operator, values) per requirement. Raises SelectorError."""
    requirements: list[tuple[str, str, frozenset[str]]] = []
    for part in _split(text):
        match = _SET.match(part)
        if match is None:
            raise SelectorError(f"unable to parse requirement: {part.strip()!r}")
        negated, key, set_op, values, op, value = match.groups()
        if negated:
            if set_op or op:
                raise SelectorError(f"unable to parse requirement: {part.strip()!r}")
            requirements.append((key, "!", frozenset()))
        elif set_op:
            requirements.append((key, set_op, frozenset(v.strip() for v in values.split(","))))
        elif op:
            requirements.append((key, "!=" if op == "!=" else "=", frozenset({value})))
        else:
            requirements.append((key, "exists", frozenset()))
    return requirements


def matches_selector(text: str, labels: Mapping[str, str]) -> bool:
    """Does the selector string ``text`` select ``labels``? An empty one selects all."""
    for key, op, values in parse_selector(text):
        present = key in labels
        ok = {
            "=": present and labels.get(key) in values,
            "!=": not present or labels.get(key) not in values,
            "in": present and labels.get(key) in values,
            "notin": not present or labels.get(key) not in values,
            "exists": present,
            "!": not present,
        }[op]
        if not ok:
            return False
    return True


def matches_node_selector(node: Node, selector: str) -> bool:
    return not selector or matches_selector(selector, node.metadata.labels)


def is_ready(node: Node) -> bool:
    """``nodeutil.IsReady``: not ready only when its Ready condition is not True."""
    for condition in node.status.conditions:
        if condition.type == "Ready" and condition.status != "True":
            return False
    return True


def ready_nodes(nodes: Iterable[Node], selector: str = "") -> list[Node]:
    """The Ready nodes ``selector`` selects, in the given order."""
    return [n for n in nodes if is_ready(n) and matches_node_selector(n, selector)]


__all__ = [
    "SelectorError",
    "is_ready",
    "matches_node_selector",
    "matches_selector",
    "parse_selector",
    "ready_nodes",
]
