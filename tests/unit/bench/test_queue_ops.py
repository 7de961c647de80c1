"""``queue_ops``: the core's raw speed, on a small backlog; what it measures is what the
queue did (every pod popped once, by priority), not only a rate."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import bench.queue_ops
from bench.queue_ops import queue_ops, run_queue_ops
from services.queue.scheduling_queue import SchedulingQueue


class KeptQueue(SchedulingQueue):
    """The real queue, kept after the run so that the test can look inside it."""

    made: ClassVar[list[SchedulingQueue]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        KeptQueue.made.append(self)


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


def test_every_kind_of_operation_is_measured_and_done_on_every_pod(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rate is ``pods`` over a time, positive whatever the phase did: what the queue
    holds at the end shows that each phase did its work on every pod."""
    monkeypatch.setattr(KeptQueue, "made", [])
    monkeypatch.setattr(bench.queue_ops, "SchedulingQueue", KeptQueue)
    pods = 300
    assert set(queue_ops(pods)) == {"add", "update", "pop", "failed+move"}
    [queue] = KeptQueue.made
    infos = list(queue.pods())
    assert sorted(i.uid for i in infos) == sorted(f"bench-{i}" for i in range(pods))
    # update: every pod carries its new labels.
    assert all(i.pod.metadata.labels == {"app": "bench", "rev": "2"} for i in infos)
    # failed+move: every pod failed once on NodeResourcesFit, and the move took it back.
    assert all(i.unschedulable_count == 1 for i in infos)
    assert all(i.unschedulable_plugins == {"NodeResourcesFit"} for i in infos)
    assert queue.counts()["active"] == pods
