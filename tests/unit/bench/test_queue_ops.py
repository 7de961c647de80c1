"""``queue_ops``: the core's raw speed, on a small backlog; what it measures is what the
queue did (every pod popped once, by priority), not only a rate."""

from __future__ import annotations

import pytest

from bench.queue_ops import queue_ops, run_queue_ops


@pytest.mark.parametrize("pods", [1, 7, 300])
def test_pop_returns_every_pod_once_in_priority_order(pods: int) -> None:
    run = run_queue_ops(pods)
    uids = [uid for uid, _ in run.popped]
    assert sorted(uids) == sorted(f"bench-{i}" for i in range(pods))
    assert len(set(uids)) == pods
    priorities = [priority for _, priority in run.popped]
    assert priorities == sorted(priorities, reverse=True)
    # After failed+move every pod is back in activeQ, and nowhere else.
    assert run.counts["active"] == pods
    assert sum(run.counts.values()) == pods


def test_queue_ops_measures_every_kind_of_operation() -> None:
    rates = queue_ops(pods=2_000)
    assert set(rates) == {"add", "update", "pop", "failed+move"}
    assert all(rate > 0 for rate in rates.values())
