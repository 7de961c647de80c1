"""Label selectors as ``k8s.io/apimachinery/pkg/labels`` builds and matches them.

:func:`label_selector_as_selector` is ``metav1.LabelSelectorAsSelector``: a nil selector
is :data:`NOTHING` (matches no object), an empty one :data:`EVERYTHING` (matches every
object and is *empty*), otherwise the AND of its requirements (``matchLabels`` entries
are ``key = value``). Invalid keys, values or operators raise :class:`SelectorError`
with the message ``labels.NewRequirement`` gives, e.g.
``values[0][app]: Invalid value: "{{x}}": a valid label must be ...``.
:func:`selector_from_set` is ``labels.SelectorFromSet`` (not validated) and
:func:`parse` is ``labels.Parse`` for the string syntax (``a=b,c in (d),!e``).

A :class:`Selector` is a frozen value (its requirements sorted, each requirement's
values sorted and unique, as the older ``sets.String`` kept them), so equal selectors
are equal and hash alike and can key caches.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from contracts.k8s import LabelSelector
from contracts.k8s.names import label_value_errors, qualified_name_errors

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
EQUALS: Final = "="
NOT_EQUALS: Final = "!="
_OPERATORS: Final = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
"""The ``metav1.LabelSelectorOperator`` values."""


class SelectorError(ValueError):
    """A selector upstream refuses to build or parse (the message is upstream's)."""


@dataclass(frozen=True, slots=True, order=True)
class Requirement:
    """One ``labels.Requirement``: ``key``, an operator and its sorted values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches``."""
        value = labels.get(self.key)
        match self.operator:
            case "In" | "=" | "==":
                return value is not None and value in self.values
            case "NotIn" | "!=":
                return value is None or value not in self.values
            case "Exists":
                return value is not None
            case _:
                return value is None


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled ``labels.Selector``; see the module docstring."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """``Selector.Matches(labels.Set(labels))``."""
        if self.nothing:
            return False
        have = labels if labels is not None else {}
        return all(r.matches(have) for r in self.requirements)

    def empty(self) -> bool:
        """``Selector.Empty()``: true only for Everything (Nothing is not empty)."""
        return not self.nothing and not self.requirements

    def add(self, extra: Iterable[Requirement]) -> Selector:
        """``Selector.Add``: AND ``extra`` (Nothing stays Nothing when matching)."""
        return Selector(tuple(sorted({*self.requirements, *extra})), self.nothing)


EVERYTHING: Final = Selector()
NOTHING: Final = Selector(nothing=True)


def label_selector_as_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``; raises :class:`SelectorError`."""
    if selector is None:
        return NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return EVERYTHING
    requirements = [
        new_requirement(key, EQUALS, (value,))
        for key, value in sorted(selector.match_labels.items())
    ]
    for expr in selector.match_expressions:
        if expr.operator not in _OPERATORS:
            raise SelectorError(f'"{expr.operator}" is not a valid label selector operator')
        requirements.append(new_requirement(expr.key, expr.operator, tuple(expr.values)))
    return Selector(tuple(sorted(set(requirements))))


def matches_label_selector(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``LabelSelectorAsSelector(selector).Matches(labels)``, a selector that does not
    build (an unknown operator, ``In`` without values, an invalid key or value)
    matching nothing, as upstream's callers treat the error."""
    try:
        compiled = label_selector_as_selector(selector)
    except SelectorError:
        return False
    return compiled.matches(labels)


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: ``key=value`` for each pair, not validated."""
    return Selector(tuple(sorted(Requirement(k, EQUALS, (v,)) for k, v in labels.items())))


@functools.lru_cache(maxsize=4096)
def new_requirement(key: str, operator: str, values: tuple[str, ...]) -> Requirement:
    """``labels.NewRequirement``: validate, then build (memoized: selectors are compiled
    per pod, and the same few requirements recur)."""
    errors = []
    key_problems = qualified_name_errors(key)
    if key_problems:
        errors.append(f'key: Invalid value: "{key}": {"; ".join(key_problems)}')
    if operator in (IN, NOT_IN) and not values:
        errors.append(
            "values: Invalid value: []string(nil): "
            "for 'in', 'notin' operators, values set can't be empty"
        )
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        quoted = ", ".join(f'"{v}"' for v in values)
        errors.append(
            f"values: Invalid value: []string{{{quoted}}}: "
            "values set must be empty for exists and does not exist"
        )
    for i, value in enumerate(values):
        problems = label_value_errors(value)
        if problems:
            errors.append(f'values[{i}][{key}]: Invalid value: "{value}": {"; ".join(problems)}')
    if errors:
        raise SelectorError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return Requirement(key, operator, tuple(sorted(set(values))))


_SET: Final = re.compile(
    r"^\s*(!?)([^\s!=,()]+)\s*(?:(in|notin)\s*\(([^)]*)\)|(==|=|!=)\s*([^\s,]*))?\s*$"
)


def parse(text: str) -> Selector:
    """``labels.Parse`` of a selector string (``kubectl -l`` syntax); an empty string
    selects everything. Raises :class:`SelectorError`."""
    requirements: list[Requirement] = []
    for part in _split(text):
        found = _SET.match(part)
        if found is None:
            raise SelectorError(f"unable to parse requirement: {part.strip()!r}")
        negated, key, set_op, values, op, value = found.groups()
        if negated:
            if set_op or op:
                raise SelectorError(f"unable to parse requirement: {part.strip()!r}")
            requirements.append(Requirement(key, DOES_NOT_EXIST))
        elif set_op:
            operator = IN if set_op == "in" else NOT_IN
            requirements.append(Requirement(key, operator, _values(values.split(","))))
        elif op:
            requirements.append(Requirement(key, NOT_EQUALS if op == "!=" else EQUALS, (value,)))
        else:
            requirements.append(Requirement(key, EXISTS))
    return Selector(tuple(sorted(set(requirements))))


def _values(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted({v.strip() for v in values}))


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
