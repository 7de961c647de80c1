"""``queue_ops``: the core's raw speed, on a small backlog."""

from __future__ import annotations

from services.queue.bench import queue_ops


def test_queue_ops_measures_every_kind_of_operation() -> None:
    rates = queue_ops(pods=2_000)
    assert set(rates) == {"add", "update", "pop", "failed+move"}
    assert all(rate > 0 for rate in rates.values())
