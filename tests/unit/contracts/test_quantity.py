"""Quantity parsing, table-driven, including the awkward cases."""

from __future__ import annotations

from fractions import Fraction

import pytest

from contracts.quantity import QuantityError, parse_quantity, resource_amount

CASES = [
    # (text, exact value)
    ("0.1", Fraction(1, 10)),
    ("100m", Fraction(1, 10)),
    ("1.5Gi", Fraction(3 * 2**29)),
    ("1e3", Fraction(1000)),
    ("1E3", Fraction(1000)),
    ("2E", Fraction(2 * 10**18)),
    (".5", Fraction(1, 2)),
    ("5.", Fraction(5)),
    ("1Ki", Fraction(1024)),
    ("1k", Fraction(1000)),
    ("1M", Fraction(10**6)),
    ("1Mi", Fraction(2**20)),
    ("1G", Fraction(10**9)),
    ("2Ki", Fraction(2048)),
    ("250n", Fraction(1, 4 * 10**6)),
    ("3u", Fraction(3, 10**6)),
    ("1e-3", Fraction(1, 1000)),
    ("+4", Fraction(4)),
    ("-1", Fraction(-1)),
    ("0", Fraction(0)),
    (2, Fraction(2)),
    (0.5, Fraction(1, 2)),
    (0.1, Fraction(1, 10)),
]


@pytest.mark.parametrize(("text", "value"), CASES, ids=[str(c[0]) for c in CASES])
def test_parse_quantity(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["12x", "", "abc", "1.2.3", "Gi", "1 Gi", "1gi", "1e", "--1", "1e1000", "0x10", True]
)
def test_invalid_quantities_are_rejected(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("resource", "text", "amount"),
    [
        ("cpu", "0.1", 100),
        ("cpu", "100m", 100),
        ("cpu", "1", 1000),
        ("cpu", "250u", 1),  # millis round up, as Quantity.MilliValue
        ("cpu", "1.0005", 1001),
        ("memory", "1.5Gi", 1610612736),
        ("memory", "500Mi", 524288000),
        ("memory", "0.5", 1),  # whole units round up, as Quantity.Value
        ("memory", "1e3", 1000),
        ("pods", "110", 110),
        ("nvidia.com/gpu", "2", 2),
    ],
)
def test_resource_amount(resource: str, text: str, amount: int) -> None:
    assert resource_amount(resource, text) == amount
