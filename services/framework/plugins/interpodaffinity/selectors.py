"""Label selectors as upstream's ``metav1.LabelSelectorAsSelector`` builds and matches them.

A nil selector matches nothing (``labels.Nothing()``), an empty one everything
(``labels.Everything()``); otherwise every requirement must hold (``matchLabels`` are
``key = value``). Invalid keys, values or operators raise :class:`SelectorError` with the
message ``labels.NewRequirement`` gives, e.g.
``values[0][app]: Invalid value: "{{x}}": a valid label must be ...``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from contracts.k8s import LabelSelector
from contracts.k8s.names import label_value_errors, qualified_name_errors

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
_OPERATORS: Final = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


class SelectorError(ValueError):
    """A selector upstream refuses to build (the message is upstream's)."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``labels.Requirement``; ``matchLabels`` entries become ``In`` one value."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == IN:
            return value is not None and value in self.values
        if self.operator == NOT_IN:
            return value is None or value not in self.values
        if self.operator == EXISTS:
            return value is not None
        return value is None


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector; hashable, so terms built from it can key caches."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        if not self.requirements:
            return True
        have = labels if labels is not None else {}
        return all(r.matches(have) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """``labels.Selector.Empty()``: true only for Everything (Nothing is not empty)."""
        return not self.nothing and not self.requirements


EVERYTHING: Final = Selector()
NOTHING: Final = Selector(nothing=True)


def compile_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``; raises SelectorError."""
    if selector is None:
        return NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return EVERYTHING
    requirements = [
        _requirement(key, IN, (value,)) for key, value in sorted(selector.match_labels.items())
    ]
    for expr in selector.match_expressions:
        if expr.operator not in _OPERATORS:
            raise SelectorError(f'"{expr.operator}" is not a valid label selector operator')
        requirements.append(_requirement(expr.key, expr.operator, expr.values))
    requirements.sort(key=lambda r: r.key)
    return Selector(tuple(requirements))


def _requirement(key: str, operator: str, values: Sequence[str]) -> Requirement:
    """``labels.NewRequirement``: validate, then build."""
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
    return Requirement(key, operator, frozenset(values))
