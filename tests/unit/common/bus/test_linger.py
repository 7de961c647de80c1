"""bus.linger: when a batch's first delivery stops waiting for more."""

from __future__ import annotations

import math

import pytest

from services.common.bus.linger import linger_deadline


@pytest.mark.parametrize(
    ("window", "arrived", "gap", "expected"),
    [
        pytest.param(0.025, 100.0, 0.002, 100.025, id="close-together-waits-from-its-arrival"),
        pytest.param(0.025, 100.0, 0.0249, 100.025, id="just-inside-the-window"),
        pytest.param(0.025, 100.0, 0.025, None, id="a-gap-of-the-window-is-not-close"),
        pytest.param(0.025, 100.0, 3.0, None, id="after-a-quiet-spell-at-once"),
        pytest.param(0.025, 100.0, math.inf, None, id="the-first-delivery-ever"),
        pytest.param(0.0, 100.0, 0.0, None, id="no-window-never-waits"),
    ],
)
def test_a_batch_waits_only_while_deliveries_come_closer_than_the_window(
    window: float, arrived: float, gap: float, expected: float | None
) -> None:
    assert linger_deadline(window, arrived, gap) == expected
