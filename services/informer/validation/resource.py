"""``resource.k8s.io/v1`` as upstream's ``pkg/apis/resource/validation`` checks it: the
pieces every kind shares (driver, pool, device and request names, qualified attribute
names, selectors, opaque configuration, tolerations). DeviceClasses and ResourceSlices
are :mod:`.resourceslice`, claims and templates :mod:`.resourceclaim`.

Departure: a CEL selector is checked for its length only. The API server also compiles
it (and refuses a compile error or a too costly expression); ksched's CEL environment
belongs to the DynamicResources plugin, which reports an expression it cannot compile
when it evaluates it.

Each check returns ``(field path, reason)`` pairs with upstream's ``field.Error`` bodies
("Required value", "Invalid value: …: …", "Duplicate value: …", "Too many: …");
the informer reports the first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, TypeVar

from contracts.k8s.names import (
    c_identifier_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from contracts.k8s.resource import (
    DeviceSelector,
    DeviceToleration,
    OpaqueDeviceConfiguration,
)
from services.informer.validation.meta import Problem, shown

T = TypeVar("T")

# ``pkg/apis/resource/types.go``'s limits.
DRIVER_NAME_MAX_LENGTH: Final = 63
POOL_NAME_MAX_LENGTH: Final = 253
DEVICE_MAX_DOMAIN_LENGTH: Final = 63
DEVICE_MAX_ID_LENGTH: Final = 32
DEVICE_SELECTORS_MAX_SIZE: Final = 32
DEVICE_CONFIG_MAX_SIZE: Final = 32
CEL_SELECTOR_EXPRESSION_MAX_LENGTH: Final = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH: Final = 10 * 1024
BINDING_CONDITIONS_MAX_SIZE: Final = 4

_TAINT_EFFECTS: Final = ("NoExecute", "NoSchedule", "None")
"""``validDeviceTaintEffects``, sorted as ``sets.List`` prints them."""
_TOLERATION_OPERATORS: Final = ("Equal", "Exists")


# -- field.Error bodies -----------------------------------------------------------------


def required(field: str, detail: str = "") -> Problem:
    return (field, f"Required value: {detail}" if detail else "Required value")


def invalid(field: str, value: object, detail: str) -> Problem:
    text = shown(value) if isinstance(value, str) else "null" if value is None else str(value)
    return (field, f"Invalid value: {text}: {detail}")


def not_supported(field: str, value: str, supported: Sequence[str]) -> Problem:
    values = ", ".join(f'"{v}"' for v in supported)
    return (field, f'Unsupported value: "{value}": supported values: {values}')


def too_long(field: str, limit: int) -> Problem:
    return (field, f"Too long: may not be more than {limit} bytes")


def too_many(field: str, count: int, limit: int) -> Problem:
    return (field, f"Too many: {count}: must have at most {limit} items")


def each(
    items: Sequence[T],
    limit: int,
    check: Callable[[T, str], list[Problem]],
    field: str,
    key: Callable[[T], str] | None = None,
) -> list[Problem]:
    """``validateSlice`` (and ``validateSet`` with ``key``): the size first (it alone is
    reported when exceeded), then every item, then duplicate keys."""
    if limit >= 0 and len(items) > limit:
        return [too_many(field, len(items), limit)]
    found: list[Problem] = []
    for i, item in enumerate(items):
        found += check(item, f"{field}[{i}]")
    if key is not None:
        seen: set[str] = set()
        for i, item in enumerate(items):
            k = key(item)
            if k in seen:
                found.append((f"{field}[{i}]", f"Duplicate value: {shown(k)}"))
            seen.add(k)
    return found


# -- names ------------------------------------------------------------------------------


def formatted(field: str, value: str, errors: list[str]) -> list[Problem]:
    return [invalid(field, value, e) for e in errors]


def driver_name_problems(name: str, field: str) -> list[Problem]:
    """``ValidateCSIDriverName``: a DNS subdomain of at most 63 characters."""
    if not name:
        return [required(field)]
    found = [too_long(field, DRIVER_NAME_MAX_LENGTH)] if len(name) > DRIVER_NAME_MAX_LENGTH else []
    return found + formatted(field, name, dns1123_subdomain_errors(name.lower()))


def pool_name_problems(name: str, field: str) -> list[Problem]:
    """``validatePoolName``: DNS subdomains separated by ``/``."""
    if not name:
        return [required(field)]
    found = [too_long(field, POOL_NAME_MAX_LENGTH)] if len(name) > POOL_NAME_MAX_LENGTH else []
    for part in name.split("/"):
        found += formatted(field, part, dns1123_subdomain_errors(part))
    return found


def label_name_problems(name: str, field: str) -> list[Problem]:
    return formatted(field, name, qualified_name_errors(name))


def dns_label_problems(name: str, field: str) -> list[Problem]:
    if not name:
        return [required(field)]
    return formatted(field, name, dns1123_label_errors(name))


def dns_subdomain_problems(name: str, field: str) -> list[Problem]:
    if not name:
        return [required(field)]
    return formatted(field, name, dns1123_subdomain_errors(name))


def _c_identifier_problems(name: str, field: str) -> list[Problem]:
    found = [too_long(field, DEVICE_MAX_ID_LENGTH)] if len(name) > DEVICE_MAX_ID_LENGTH else []
    return found + formatted(field, name, c_identifier_errors(name))


def qualified_attribute_problems(name: str, field: str) -> list[Problem]:
    """``validateQualifiedName``: a C identifier, optionally after a ``domain/``."""
    if not name:
        return [required(field, "name required")]
    parts = name.split("/")
    if len(parts) == 1:
        return _c_identifier_problems(name, field)
    if len(parts) != 2:
        return []  # as upstream's switch: more than one slash is not checked
    domain, ident = parts
    found = (
        [invalid(field, "", "the domain must not be empty")]
        if not domain
        else driver_name_problems(domain, field)
    )
    if not ident:
        return [*found, invalid(field, "", "the name must not be empty")]
    return found + _c_identifier_problems(ident, field)


def fully_qualified_problems(name: str, field: str) -> list[Problem]:
    """``validateFullyQualifiedName``: a qualified name that has its domain."""
    found = qualified_attribute_problems(name, field)
    if "/" not in name:
        found.append(
            invalid(
                field,
                name,
                "a fully qualified name must be a domain and a name separated by a slash",
            )
        )
    return found


# -- shared pieces ----------------------------------------------------------------------


def selector_problems(selector: DeviceSelector, field: str) -> list[Problem]:
    """``validateSelector``; the expression is not compiled (see the module docstring)."""
    if selector.cel is None:
        return [required(f"{field}.cel")]
    expression = selector.cel.expression
    at = f"{field}.cel.expression"
    if not expression:
        return [required(at, "expression must not be empty")]
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [too_long(at, CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    return []


def selectors_problems(selectors: Sequence[DeviceSelector], field: str) -> list[Problem]:
    return each(selectors, DEVICE_SELECTORS_MAX_SIZE, selector_problems, field)


def opaque_problems(opaque: OpaqueDeviceConfiguration | None, field: str) -> list[Problem]:
    """``validateDeviceConfiguration``: an opaque configuration with a driver and a JSON
    object as its parameters."""
    if opaque is None:
        return [required(f"{field}.opaque")]
    at = f"{field}.opaque"
    found = driver_name_problems(opaque.driver, f"{at}.driver")
    if opaque.parameters is None:
        found.append(required(f"{at}.parameters"))
    elif not isinstance(opaque.parameters, dict):
        found.append(invalid(f"{at}.parameters", "<value omitted>", "must be a valid JSON object"))
    return found


def toleration_problems(toleration: DeviceToleration, field: str) -> list[Problem]:
    """``validateDeviceToleration``."""
    found = label_name_problems(toleration.key, f"{field}.key") if toleration.key else []
    operator, value = toleration.operator or "", toleration.value or ""
    if operator == "Exists":
        if value:
            found.append(invalid(f"{field}.value", value, "must be empty for operator `Exists`"))
    elif operator == "Equal":
        found += formatted(f"{field}.value", value, label_value_errors(value))
    elif not operator:
        found.append(required(f"{field}.operator"))
    else:
        found.append(not_supported(f"{field}.operator", operator, _TOLERATION_OPERATORS))
    if toleration.effect and toleration.effect not in _TAINT_EFFECTS:
        found.append(not_supported(f"{field}.effect", toleration.effect, _TAINT_EFFECTS))
    return found
