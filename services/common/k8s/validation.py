"""Field errors as apimachinery's ``util/validation/field`` words them (a path built
with :func:`join_path`, :class:`FieldError`, :func:`aggregate`), and the parse-time
checks of node selector requirements, as ``labels.NewRequirement`` and
``nodeSelectorRequirementsAsFieldSelector`` make them. A term with any error matches
no node; the errors are reported where upstream reports them (preferred terms, args).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from contracts.k8s.names import label_value_errors, qualified_name_errors

LABEL_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS: Final = ("In", "NotIn")
_INT64 = re.compile(r"^[+-]?[0-9]+$")


def join_path(prefix: str, child: str) -> str:
    """``join_path("a", "b") == "a.b"``, ``join_path("a", "[0]") == "a[0]"``."""
    if not prefix:
        return child.lstrip(".")
    if not child or child.startswith("["):
        return prefix + child
    return f"{prefix}.{child.lstrip('.')}"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem, at ``field`` (``[0].matchExpressions[1].values``)."""

    field: str
    detail: str

    def __str__(self) -> str:
        return f"{self.field}: {self.detail}"


def aggregate(errors: Sequence[FieldError]) -> str:
    """``errors.NewAggregate(...).Error()``: one message, or ``[a, b]`` for several."""
    if len(errors) == 1:
        return str(errors[0])
    return "[" + ", ".join(str(e) for e in errors) + "]"


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``; None where Go reports an error."""
    if not _INT64.match(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _go_list(values: Sequence[str]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def check_label_requirement(
    key: str, operator: str, values: Sequence[str], path: str
) -> list[FieldError]:
    """Problems of one ``matchExpressions`` entry (``labels.NewRequirement``)."""
    if operator not in LABEL_OPERATORS:
        supported = ", ".join(f'"{op}"' for op in LABEL_OPERATORS)
        detail = f'Unsupported value: "{operator}": supported values: {supported}'
        return [FieldError(f"{path}.operator", detail)]
    errors: list[FieldError] = []
    key_problems = qualified_name_errors(key)
    if key_problems:
        detail = "; ".join(key_problems)
        errors.append(FieldError(f"{path}.key", f'Invalid value: "{key}": {detail}'))
    vpath = f"{path}.values"
    if operator in ("In", "NotIn") and not values:
        detail = "for 'in', 'notin' operators, values set can't be empty"
        errors.append(FieldError(vpath, f"Invalid value: {_go_list(values)}: {detail}"))
    elif operator in ("Exists", "DoesNotExist") and values:
        detail = "values set must be empty for exists and does not exist"
        errors.append(FieldError(vpath, f"Invalid value: {_go_list(values)}: {detail}"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            detail = "for 'Gt', 'Lt' operators, exactly one value is required"
            errors.append(FieldError(vpath, f"Invalid value: {_go_list(values)}: {detail}"))
        for i, value in enumerate(values):
            if parse_int64(value) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errors.append(FieldError(f"{vpath}[{i}]", f'Invalid value: "{value}": {detail}'))
    for i, value in enumerate(values):
        value_problems = label_value_errors(value)
        if value_problems:
            detail = "; ".join(value_problems)
            errors.append(FieldError(f"{vpath}[{i}][{key}]", f'Invalid value: "{value}": {detail}'))
    return errors


def check_field_requirement(operator: str, values: Sequence[str], path: str) -> list[FieldError]:
    """Problems of one ``matchFields`` entry: In or NotIn with exactly one value."""
    if operator not in FIELD_OPERATORS:
        detail = f'Unsupported value: "{operator}": supported values: "In", "NotIn"'
        return [FieldError(f"{path}.operator", detail)]
    if len(values) != 1:
        detail = f"Invalid value: {_go_list(values)}: must have one element"
        return [FieldError(f"{path}.values", detail)]
    return []
