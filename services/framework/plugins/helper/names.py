"""Label key and value checks with apimachinery's messages (``IsQualifiedName``,
``IsValidLabelValue``): what makes a selector requirement or a topologyKey invalid."""

from __future__ import annotations

import re
from typing import Final

_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME = re.compile(f"^{_NAME_FMT}$")
_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_VALUE_FMT: Final = f"({_NAME_FMT})?"
_VALUE = re.compile(f"^{_VALUE_FMT}$")
_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)
_SUBDOMAIN_FMT: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FMT}$")
_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``, including its doubled spaces between examples."""
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName``: an optional DNS subdomain prefix and ``/``, then a name."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        name_rule = _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a qualified name {name_rule} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if not _SUBDOMAIN.match(prefix):
                rule = _regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com")
                errors.append(f"prefix part {rule}")
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _NAME.match(name):
        rule = _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
        errors.append(f"name part {rule}")
    return errors


def label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue``."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _VALUE.match(value):
        errors.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors
