"""Kubernetes' CEL library types for DRA selectors: ``quantity`` and ``semver``
(``k8s.io/apiserver/pkg/cel/library`` Quantity and Semver), as CEL message types
``kubernetes.Quantity`` and ``kubernetes.Semver``.

cel-expr-python cannot carry opaque Python objects, so each value is a protobuf message
with one string field holding its canonical form: a quantity's exact value as
``numerator/denominator`` (so ``quantity("1Gi") == quantity("1024Mi")`` holds, as
upstream's semantic equality), a version's text. The function names, overloads and
error texts are upstream's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from contracts.quantity import QuantityError, parse_quantity

QUANTITY_TYPE: Final = "kubernetes.Quantity"
SEMVER_TYPE: Final = "kubernetes.Semver"
QUANTITY_SYNTAX_ERROR: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_FIELD: Final = "canonical"
_INT64_MAX: Final = 2**63 - 1
_INT64_MIN: Final = -(2**63)


def _pool() -> descriptor_pool.DescriptorPool:
    proto = descriptor_pb2.FileDescriptorProto(
        name="ksched/kubernetes_cel.proto", package="kubernetes", syntax="proto3"
    )
    for name in ("Quantity", "Semver"):
        message = proto.message_type.add(name=name)
        message.field.add(
            name=_FIELD,
            number=1,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


POOL: Final = _pool()
_QuantityMessage: Final[Any] = message_factory.GetMessageClass(
    POOL.FindMessageTypeByName(QUANTITY_TYPE)
)
_SemverMessage: Final[Any] = message_factory.GetMessageClass(
    POOL.FindMessageTypeByName(SEMVER_TYPE)
)


# -- quantity ---------------------------------------------------------------------


def quantity_message(value: Fraction) -> Any:
    return _QuantityMessage(canonical=f"{value.numerator}/{value.denominator}")


def _value(message: Any) -> Fraction:
    return _fraction(message.canonical)


@functools.lru_cache(maxsize=4096)
def _fraction(canonical: str) -> Fraction:
    return Fraction(canonical)


def _parse(text: str) -> Fraction:
    try:
        return parse_quantity(text)
    except QuantityError:
        raise ValueError(QUANTITY_SYNTAX_ERROR) from None


def _quantity(text: str) -> Any:
    return quantity_message(_parse(text))


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _compare(a: Fraction, b: Fraction) -> int:
    return (a > b) - (a < b)


def _as_integer(message: Any) -> int:
    value = _value(message)
    if value.denominator != 1 or not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError("cannot convert value to integer")
    return int(value)


def _is_integer(message: Any) -> bool:
    value = _value(message)
    return value.denominator == 1 and _INT64_MIN <= value <= _INT64_MAX


def _add(a: Any, b: Any) -> Any:
    other = Fraction(b) if isinstance(b, int) else _value(b)
    return quantity_message(_value(a) + other)


def _sub(a: Any, b: Any) -> Any:
    other = Fraction(b) if isinstance(b, int) else _value(b)
    return quantity_message(_value(a) - other)


# -- semver -----------------------------------------------------------------------

_DIGITS: Final = frozenset("0123456789")
_ALNUM: Final = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


def _number(text: str, name: str) -> int:
    if not text or not set(text) <= _DIGITS:
        raise ValueError(f'Invalid character(s) found in {name.lower()} number "{text}"')
    if len(text) > 1 and text[0] == "0":
        raise ValueError(f'{name} number must not contain leading zeroes "{text}"')
    return int(text)


def parse_semver(text: str) -> tuple[int, int, int, tuple[str, ...]]:
    """blang/semver's ``Parse`` with its error texts; raises ValueError."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "Major")
    minor = _number(parts[1], "Minor")
    rest = parts[2]
    cut = min((i for i in (rest.find("+"), rest.find("-")) if i >= 0), default=len(rest))
    patch = _number(rest[:cut], "Patch")
    build = ""
    pre_text = ""
    if cut < len(rest):
        tail = rest[cut:]
        if tail[0] == "-":
            pre_text, _, build = tail[1:].partition("+")
            has_build = "+" in tail[1:]
        else:
            build, has_build = tail[1:], True
        if has_build:
            for part in build.split("."):
                if not part:
                    raise ValueError("Buildversion is empty")
                if not set(part) <= _ALNUM:
                    raise ValueError(f'Invalid character(s) found in build meta data "{part}"')
    pre: tuple[str, ...] = ()
    if cut < len(rest) and rest[cut] == "-":
        pre = tuple(pre_text.split("."))
        for part in pre:
            if not part:
                raise ValueError("Prerelease is empty")
            if set(part) <= _DIGITS:
                if len(part) > 1 and part[0] == "0":
                    raise ValueError(
                        f'Numeric PreRelease version must not contain leading zeroes "{part}"'
                    )
            elif not set(part) <= _ALNUM:
                raise ValueError(f'Invalid character(s) found in prerelease "{part}"')
    return major, minor, patch, pre


def normalize_semver(text: str) -> str:
    """The library's ``normalizeAndParse`` before parsing: no "v" prefix, no leading
    zeros, missing minor and patch filled with 0."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _DIGITS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def semver_message(text: str) -> Any:
    parse_semver(text)
    return _SemverMessage(canonical=text)


def _semver(text: str, normalize: bool = False) -> Any:
    return semver_message(normalize_semver(text) if normalize else text)


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(normalize_semver(text) if normalize else text)
    except ValueError:
        return False
    return True


def _pre_key(part: str) -> tuple[int, int, str]:
    return (0, int(part), "") if part.isdigit() else (1, 0, part)


def _semver_compare(a: Any, b: Any) -> int:
    va, vb = parse_semver(a.canonical), parse_semver(b.canonical)
    if va[:3] != vb[:3]:
        return -1 if va[:3] < vb[:3] else 1
    pa, pb = va[3], vb[3]
    if pa == pb:
        return 0
    if not pa or not pb:
        return 1 if not pa else -1
    ka, kb = [_pre_key(p) for p in pa], [_pre_key(p) for p in pb]
    return -1 if ka < kb else 1


# -- regex (Kubernetes' regex library) ----------------------------------------------


def _find(text: str, pattern: str) -> str:
    found = re.search(pattern, text)
    return "" if found is None else found.group(0)


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found if limit < 0 else found[:limit]


# -- declarations -----------------------------------------------------------------


def function_decls() -> list[cel.FunctionDecl]:
    """The quantity and semver libraries' functions, with upstream's overload ids."""
    t = cel.Type
    q, v = t(QUANTITY_TYPE), t(SEMVER_TYPE)
    decls: list[tuple[str, list[tuple[str, Any, list[Any], bool, Callable[..., Any] | None]]]] = [
        ("quantity", [("string_to_quantity", q, [t.STRING], False, _quantity)]),
        ("isQuantity", [("is_quantity_string", t.BOOL, [t.STRING], False, _is_quantity)]),
        ("sign", [("quantity_sign", t.INT, [q], True, lambda a: _compare(_value(a), Fraction(0)))]),
        ("isInteger", [("quantity_is_integer", t.BOOL, [q], True, _is_integer)]),
        ("asInteger", [("quantity_as_integer", t.INT, [q], True, _as_integer)]),
        (
            "asApproximateFloat",
            [("quantity_as_float", t.DOUBLE, [q], True, lambda a: float(_value(a)))],
        ),
        (
            "add",
            [
                ("quantity_add", q, [q, q], True, _add),
                ("quantity_add_int", q, [q, t.INT], True, _add),
            ],
        ),
        (
            "sub",
            [
                ("quantity_sub", q, [q, q], True, _sub),
                ("quantity_sub_int", q, [q, t.INT], True, _sub),
            ],
        ),
        (
            "semver",
            [
                ("string_to_semver", v, [t.STRING], False, _semver),
                ("string_bool_to_semver", v, [t.STRING, t.BOOL], False, _semver),
            ],
        ),
        (
            "isSemver",
            [
                ("is_semver_string", t.BOOL, [t.STRING], False, _is_semver),
                ("is_semver_string_bool", t.BOOL, [t.STRING, t.BOOL], False, _is_semver),
            ],
        ),
        ("find", [("string_find_n", t.STRING, [t.STRING, t.STRING], True, _find)]),
        (
            "findAll",
            [
                ("string_find_all", t.List(t.STRING), [t.STRING, t.STRING], True, _find_all),
                (
                    "string_find_all_n",
                    t.List(t.STRING),
                    [t.STRING, t.STRING, t.INT],
                    True,
                    _find_all,
                ),
            ],
        ),
        ("major", [("semver_major", t.INT, [v], True, lambda a: parse_semver(a.canonical)[0])]),
        ("minor", [("semver_minor", t.INT, [v], True, lambda a: parse_semver(a.canonical)[1])]),
        ("patch", [("semver_patch", t.INT, [v], True, lambda a: parse_semver(a.canonical)[2])]),
        (
            "isGreaterThan",
            [
                ("quantity_is_greater_than", t.BOOL, [q, q], True, lambda a, b: _cmp(a, b) > 0),
                ("semver_is_greater_than", t.BOOL, [v, v], True, None),
            ],
        ),
        (
            "isLessThan",
            [
                ("quantity_less_than", t.BOOL, [q, q], True, lambda a, b: _cmp(a, b) < 0),
                ("semver_is_less_than", t.BOOL, [v, v], True, None),
            ],
        ),
        (
            "compareTo",
            [
                ("quantity_compare_to", t.INT, [q, q], True, _cmp),
                ("semver_compare_to", t.INT, [v, v], True, None),
            ],
        ),
    ]
    # cel-cpp dispatches on value kinds, and both types are messages: an overload
    # without impl shares the first one's, which tells them apart (_cmp).
    return [
        cel.FunctionDecl(
            name,
            [
                cel.Overload(oid, ret, params, is_member=member, impl=impl)
                if impl is not None
                else cel.Overload(oid, ret, params, is_member=member)
                for oid, ret, params, member, impl in overloads
            ],
        )
        for name, overloads in decls
    ]


def _cmp(a: Any, b: Any) -> int:
    """compareTo for two quantities or two versions (never mixed: the checker
    refuses that)."""
    if a.DESCRIPTOR.full_name == SEMVER_TYPE:
        return _semver_compare(a, b)
    return _compare(_value(a), _value(b))
