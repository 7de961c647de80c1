"""backoffQ: durations per attempt, the separate error count, the one-second windows and
PopFromBackoffQ."""

from __future__ import annotations

import pytest

from services.queue.cluster_events import NODE_ADD
from services.queue.types import SubQueue
from tests.builders import make_node, make_pod
from tests.unit.queue.helpers import START, add, make_queue, park


@pytest.mark.parametrize(
    ("count", "seconds"),
    [(0, 0.0), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (6, 10.0), (60, 10.0)],
)
def test_backoff_doubles_from_one_second_up_to_ten(count: int, seconds: float) -> None:
    queue, _ = make_queue()
    assert queue.backoff_duration(count) == seconds


def test_the_configured_backoff_bounds_are_used() -> None:
    from services.common.clock import FakeClock
    from services.queue.scheduling_queue import SchedulingQueue
    from tests.unit.queue.helpers import DEFAULT

    queue = SchedulingQueue([DEFAULT], FakeClock(), initial_backoff=2.0, max_backoff=30.0)
    assert [queue.backoff_duration(n) for n in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 16.0, 30.0]


@pytest.mark.parametrize("pop_from_backoff", [False, True])
def test_each_error_doubles_the_backoff_until_ten_seconds(pop_from_backoff: bool) -> None:
    queue, clock = make_queue(pop_from_backoff=pop_from_backoff)
    add(queue, make_pod("a"))
    for expected in (1, 2, 4, 8, 10, 10):
        (info,) = queue.pop(1)
        failed_at = clock.now()
        assert queue.add_unschedulable_if_not_present(info.uid, []) is SubQueue.BACKOFF
        end = queue.backoff_time(info)
        assert end == failed_at + expected
        # Flushed on the first tick after the backoff (with aligned windows, after the
        # window it ends in).
        over = end + 1.0 if pop_from_backoff else end + 0.01
        clock.set_time(over - 0.01)
        assert queue.flush_backoff_q_completed() == 0
        clock.set_time(over)
        assert queue.flush_backoff_q_completed() == 1


def test_expiry_is_aligned_to_the_second_with_pop_from_backoff() -> None:
    queue, clock = make_queue()
    clock.step(0.3)
    add(queue, make_pod("a"))
    (info,) = queue.pop(1)
    queue.add_unschedulable_if_not_present(info.uid, [])
    assert queue.backoff_time(info) == START + 1.0  # 0.3 + 1 s, truncated to the second
    assert queue.next_backoff_expiry() == START + 2.0
    clock.set_time(START + 1.9)  # inside the window the backoff ends in
    assert queue.flush_backoff_q_completed() == 0
    clock.set_time(START + 2.0)
    assert queue.flush_backoff_q_completed() == 1


def test_rejections_and_errors_are_counted_apart() -> None:
    queue, clock = make_queue()
    add(queue, make_pod("a"))
    for _ in range(4):  # four rejections: the next rejection would wait 16 → 10 s
        (info,) = queue.pop(1)
        queue.add_unschedulable_if_not_present(info.uid, ["NodeResourcesFit"])
        clock.step(400)
        queue.flush_unschedulable_pods_leftover()
        queue.flush_backoff_q_completed()
    (info,) = queue.pop(1)
    failed_at = clock.now()
    queue.add_unschedulable_if_not_present(info.uid, [])  # an error: first in a row
    assert (info.unschedulable_count, info.consecutive_errors_count) == (4, 1)
    assert queue.backoff_time(info) == failed_at + 1.0
    clock.step(2)
    queue.flush_backoff_q_completed()
    (info,) = queue.pop(1)
    queue.add_unschedulable_if_not_present(info.uid, ["NodeResourcesFit"])
    assert (info.unschedulable_count, info.consecutive_errors_count) == (5, 0)
    assert queue.backoff_time(info) == clock.now() + 10.0


def test_a_never_attempted_pod_owes_no_backoff() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"))
    info = queue.get("default-a-uid")
    assert info is not None and queue.backoff_time(info) is None
    assert not queue.is_backing_off(info)


def test_pop_from_backoff_takes_the_backoff_head_when_active_q_is_empty() -> None:
    queue, _ = make_queue()
    low = park(queue, make_pod("low", priority=1), "NodeResourcesFit")
    high = park(queue, make_pod("high", priority=9), "NodeResourcesFit")
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    assert (low.where, high.where) == (SubQueue.BACKOFF, SubQueue.BACKOFF)
    add(queue, make_pod("new"))
    # activeQ first; then the backoff head, same window ordered by priority.
    assert [i.pod.metadata.name for i in queue.pop(3)] == ["new", "high", "low"]
    assert queue.incoming[("active", "PopFromBackoffQ")] == 2


def test_pop_from_backoff_never_takes_error_backoff_pods() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"))
    (info,) = queue.pop(1)
    queue.add_unschedulable_if_not_present(info.uid, [])
    assert info.where is SubQueue.BACKOFF
    assert queue.pop(1) == []


def test_without_pop_from_backoff_backoff_pods_wait_for_the_flush() -> None:
    queue, clock = make_queue(pop_from_backoff=False)
    park(queue, make_pod("a"), "NodeResourcesFit")
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    assert queue.pop(1) == []
    clock.step(1.01)
    queue.flush_backoff_q_completed()
    assert len(queue.pop(1)) == 1


def test_heads_of_backoff_are_in_expiry_order() -> None:
    queue, clock = make_queue()
    add(queue, make_pod("first"))
    queue.pop(1)
    queue.add_unschedulable_if_not_present("default-first-uid", [])
    clock.step(1.5)
    add(queue, make_pod("second"), order=1)
    queue.pop(1)
    queue.add_unschedulable_if_not_present("default-second-uid", ["NodeResourcesFit"])
    clock.step(0.1)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    heads = queue.heads(5)[SubQueue.BACKOFF]
    assert [i.pod.metadata.name for i in heads] == ["first", "second"]
