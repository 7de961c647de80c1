"""The RabbitMQ bus's reconnection: its backoff, and how often it lets aio-pika's lines
about failed attempts through (the broker itself is restarted in
tests/integration/test_broker_restart.py)."""

from __future__ import annotations

import logging

import pytest

from services.common.bus.rabbit_connection import (
    RECONNECT_FIRST,
    RECONNECT_LOG_EVERY,
    RECONNECT_MAX,
    _RateLimit,
    reconnect_delay,
)


@pytest.mark.parametrize(
    ("down", "delay"),
    [
        (0.0, RECONNECT_FIRST),
        (0.3, RECONNECT_FIRST),
        (1.0, 1.0),
        (2.0, 2.0),
        (4.0, 4.0),
        (8.0, RECONNECT_MAX),
        (3600.0, RECONNECT_MAX),
    ],
)
def test_the_wait_before_reconnecting_grows_with_the_outage(down: float, delay: float) -> None:
    assert reconnect_delay(down) == delay


def test_the_waits_double_from_the_first_up_to_the_cap() -> None:
    down, waits = 0.0, []
    for _ in range(7):
        waits.append(reconnect_delay(down))
        down += waits[-1]
    assert waits == [0.5, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def record(level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord("aio_pika.robust_connection", level, __file__, 1, "m", None, None)


@pytest.mark.parametrize(
    ("times", "passed"),
    [
        ([0.0], [True]),
        ([0.0, 0.5, 1.0, 2.0, 4.0], [True, False, False, False, False]),
        ([0.0, RECONNECT_LOG_EVERY, 2 * RECONNECT_LOG_EVERY], [True, True, True]),
        ([10.0, 14.9, 15.0, 15.1, 21.0], [True, False, True, False, True]),
    ],
    ids=["first", "burst", "spaced", "mixed"],
)
def test_lines_about_attempts_pass_at_most_once_every_few_seconds(
    times: list[float], passed: list[bool]
) -> None:
    now = 0.0
    limit = _RateLimit(clock=lambda: now)
    seen = []
    for now in times:  # noqa: B007 (the clock reads it)
        seen.append(limit.filter(record()))
    assert seen == passed


def test_debug_lines_are_not_limited() -> None:
    limit = _RateLimit(clock=lambda: 0.0)
    assert limit.filter(record())
    assert limit.filter(record(logging.DEBUG))
    assert not limit.filter(record(logging.INFO))
