"""apimachinery's name checks (``k8s.io/apimachinery/pkg/util/validation``), with its
messages: what the API server refuses in object names, namespaces, label keys and values.

Each function returns the list of problems (empty when the value is valid), as upstream's
``Is*`` functions do. Patterns match the whole string (Go's ``$`` is the end of the text;
Python's would let a trailing newline through, hence ``fullmatch``).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "C_IDENTIFIER_FMT",
    "DNS1035_LABEL_MAX_LENGTH",
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "QUALIFIED_NAME_MAX_LENGTH",
    "c_identifier_errors",
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "label_value_errors",
    "qualified_name_errors",
]

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
DNS1035_LABEL_MAX_LENGTH: Final = 63
QUALIFIED_NAME_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63

_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME = re.compile(_NAME_FMT)
_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_VALUE_FMT: Final = f"({_NAME_FMT})?"
_VALUE = re.compile(_VALUE_FMT)
_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)
_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL = re.compile(_LABEL_FMT)
_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_FMT: Final = rf"{_LABEL_FMT}(\.{_LABEL_FMT})*"
_SUBDOMAIN = re.compile(_SUBDOMAIN_FMT)
_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1035_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035 = re.compile(_DNS1035_FMT)
_DNS1035_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
    "with an alphabetic character, and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``, including its doubled spaces between examples."""
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _checked(
    value: str, limit: int, pattern: re.Pattern[str], msg: str, *examples: str
) -> list[str]:
    """The problems of ``value`` under a length ``limit`` and a whole-string
    ``pattern``, in upstream's order: too long, then not matching (``msg``, the
    ``examples`` and the pattern)."""
    errors: list[str] = []
    if len(value) > limit:
        errors.append(_max_len(limit))
    if not pattern.fullmatch(value):
        errors.append(_regex_error(msg, pattern.pattern, *examples))
    return errors


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
            errors += [f"prefix part {e}" for e in dns1123_subdomain_errors(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errors.append(f"name part {_max_len(QUALIFIED_NAME_MAX_LENGTH)}")
    if not _NAME.fullmatch(name):
        rule = _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
        errors.append(f"name part {rule}")
    return errors


def label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue``."""
    return _checked(
        value, LABEL_VALUE_MAX_LENGTH, _VALUE, _VALUE_MSG, "MyValue", "my_value", "12345"
    )


def dns1123_label_errors(value: str) -> list[str]:
    """``IsDNS1123Label``: namespace names, container names."""
    return _checked(value, DNS1123_LABEL_MAX_LENGTH, _LABEL, _LABEL_MSG, "my-name", "123-abc")


def dns1123_subdomain_errors(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: pod, node and most other object names."""
    return _checked(value, DNS1123_SUBDOMAIN_MAX_LENGTH, _SUBDOMAIN, _SUBDOMAIN_MSG, "example.com")


def dns1035_label_errors(value: str) -> list[str]:
    """``IsDNS1035Label``: Service names."""
    return _checked(value, DNS1035_LABEL_MAX_LENGTH, _DNS1035, _DNS1035_MSG, "my-name", "abc-123")


C_IDENTIFIER_FMT: Final = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER = re.compile(C_IDENTIFIER_FMT)
_C_IDENTIFIER_MSG: Final = (
    "a valid C identifier must start with alphabetic character or '_', followed by a "
    "string of alphanumeric characters or '_'"
)


def c_identifier_errors(value: str) -> list[str]:
    """``IsCIdentifier``: device attribute and capacity names (after the domain)."""
    if _C_IDENTIFIER.fullmatch(value):
        return []
    return [_regex_error(_C_IDENTIFIER_MSG, C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]
