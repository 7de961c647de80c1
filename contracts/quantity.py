"""Kubernetes resource quantities, parsed exactly.

A quantity is ``<sign><number><suffix>`` where the suffix is a binary SI unit
(``Ki Mi Gi Ti Pi Ei``), a decimal SI unit (``n u m "" k M G T P E``) or a decimal
exponent (``e3``, ``E-2``). The value is kept as a :class:`fractions.Fraction` so that
``0.1`` CPU is exactly 100 millicores; floats are never involved.

ksched stores every resource as an integer: CPU in millicores, everything else in
base units (bytes, counts). Like ``resource.Quantity.MilliValue()`` and ``Value()``,
the conversion rounds a fractional result up.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

__all__ = [
    "CPU",
    "MAX_QUANTITY",
    "QuantityError",
    "format_quantity",
    "parse_quantity",
    "to_int",
    "to_millis",
]

CPU = "cpu"

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# ASCII digits only, as upstream's parser ('0'..'9'): Python's \d would take full-width digits.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)"
)
# Upstream caps exponents far below this; a bound keeps "1e999999" from eating memory.
_MAX_EXPONENT = 100
MAX_QUANTITY = 2**63 - 1
"""The largest magnitude accepted: ``Quantity.Value()`` is an int64 upstream, and every
integer ksched stores (bytes, counts) must fit one."""
_MAX_TEXT = 128
"""Longer strings are refused before parsing (the longest valid int64 quantity with nine
fractional digits is far shorter)."""


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Return the exact value of a quantity such as ``"100m"``, ``"1.5Gi"`` or ``"1e3"``.

    Numbers (as YAML or JSON may give them) are read through their shortest decimal
    form, so ``0.1`` means one tenth. Raises :class:`QuantityError` for anything else.
    """
    if isinstance(text, bool):
        raise QuantityError(f"quantities must be strings or numbers, not {text!r}")
    if isinstance(text, int):
        if abs(text) > MAX_QUANTITY:
            raise QuantityError(f"quantity {text} is out of range (at most {MAX_QUANTITY})")
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"quantity {text!r} is not finite")
        text = repr(text)
    if not isinstance(text, str):
        raise QuantityError(f"quantities must be strings or numbers, not {type(text).__name__}")
    return _parse_text(text)


@functools.lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    """Parse the string form. Cached: clusters repeat a handful of quantities endlessly,
    and a Fraction is immutable."""
    match = _QUANTITY.fullmatch(text) if len(text) <= _MAX_TEXT else None
    if match is None:
        raise QuantityError(
            f"quantity {_shown(text)} must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    value = Fraction(match["number"])
    suffix = match["suffix"]
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"quantity {_shown(text)} has an exponent out of range")
        value *= Fraction(10) ** exponent
    if value > MAX_QUANTITY:
        raise QuantityError(f"quantity {_shown(text)} is out of range (at most {MAX_QUANTITY})")
    return -value if match["sign"] == "-" else value


def _shown(text: str) -> str:
    """``text`` quoted for a message, cut short: hostile input can be megabytes long."""
    return repr(text) if len(text) <= 40 else f"{text[:40]!r}… ({len(text)} characters)"


def to_millis(value: Fraction) -> int:
    """Whole thousandths of ``value``, rounded up (``Quantity.MilliValue``)."""
    return math.ceil(value * 1000)


def to_int(value: Fraction) -> int:
    """``value`` in whole base units, rounded up (``Quantity.Value``)."""
    return math.ceil(value)


def resource_amount(name: str, text: str | int | float) -> int:
    """The integer ksched stores for resource ``name``: millicores for cpu, else units."""
    value = parse_quantity(text)
    return to_millis(value) if name == CPU else to_int(value)


_DECIMAL_SUFFIXES = (
    (10**18, "E"),
    (10**15, "P"),
    (10**12, "T"),
    (10**9, "G"),
    (10**6, "M"),
    (10**3, "k"),
)
_BINARY_SUFFIXES = (
    (2**60, "Ei"),
    (2**50, "Pi"),
    (2**40, "Ti"),
    (2**30, "Gi"),
    (2**20, "Mi"),
    (2**10, "Ki"),
)


def format_quantity(value: Fraction) -> str:
    """``value`` as a quantity string, in its shortest canonical form (``2``, ``300m``,
    ``4Gi``, ``1k``)."""
    if value.denominator == 1:
        number = int(value)
        if number == 0:
            return "0"
        for factor, suffix in _BINARY_SUFFIXES:
            if number % factor == 0:
                return f"{number // factor}{suffix}"
        for factor, suffix in _DECIMAL_SUFFIXES:
            if number % factor == 0:
                return f"{number // factor}{suffix}"
        return str(number)
    for scale, suffix in ((10**3, "m"), (10**6, "u"), (10**9, "n")):
        scaled = value * scale
        if scaled.denominator == 1:
            return f"{int(scaled)}{suffix}"
    return str(math.ceil(value * 10**9)) + "n"
