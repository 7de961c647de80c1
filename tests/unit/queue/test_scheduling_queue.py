"""The queue core: order, backoff, parking, moves, the in-flight rule, gates."""

from __future__ import annotations

import pytest

from contracts.k8s import ObjectMeta, Pod, PodSchedulingGate, PodSpec
from services.queue.scheduling_queue import SchedulingQueue, Where


def pod(name: str, *, gates: tuple[str, ...] = (), labels: dict[str, str] | None = None) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}", labels=labels or {}),
        spec=PodSpec(scheduling_gates=[PodSchedulingGate(name=g) for g in gates]),
    )


def names(infos: list) -> list[str]:  # type: ignore[type-arg]
    return [i.pod.metadata.name for i in infos]


@pytest.mark.parametrize(
    ("attempts", "seconds"),
    [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (6, 10.0), (20, 10.0)],
)
def test_backoff_doubles_from_one_second_up_to_ten(attempts: int, seconds: float) -> None:
    assert SchedulingQueue().backoff_duration(attempts) == seconds


def test_higher_priority_first_then_earlier_timestamp_then_arrival() -> None:
    q = SchedulingQueue()
    q.add(pod("low-early"), 0, now=1.0, order=1)
    q.add(pod("high-late"), 100, now=5.0, order=2)
    q.add(pod("low-late"), 0, now=2.0, order=3)
    q.add(pod("low-same-time"), 0, now=2.0, order=4)
    assert names(q.pop(10)) == ["high-late", "low-early", "low-late", "low-same-time"]


def test_pop_respects_the_limit_and_marks_in_flight() -> None:
    q = SchedulingQueue()
    for i in range(5):
        q.add(pod(f"p{i}"), 0, now=0.0, order=i)
    first = q.pop(2)
    assert names(first) == ["p0", "p1"]
    assert all(i.where is Where.IN_FLIGHT and i.attempts == 1 for i in first)
    assert q.counts()["active"] == 3


def test_unschedulable_pod_is_parked_until_an_event_moves_it_then_backs_off() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    (info,) = q.pop(1)
    q.failed(info.uid, now=10.0, plugins=["NodeResourcesFit"], error=False)
    assert info.where is Where.UNSCHEDULABLE
    assert q.flush_backoff(now=100.0) == 0  # parked pods are not in backoffQ
    assert q.move_all(now=10.5) == 1
    assert info.where is Where.BACKOFF  # still inside its 1 s backoff
    assert q.flush_backoff(now=10.9) == 0
    assert q.flush_backoff(now=11.0) == 1
    assert names(q.pop(1)) == ["a"]


def test_move_after_backoff_expired_goes_straight_to_active() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    (info,) = q.pop(1)
    q.failed(info.uid, now=10.0, plugins=["NodeResourcesFit"], error=False)
    q.move_all(now=20.0)
    assert info.where is Where.ACTIVE


def test_move_only_helps_pods_rejected_by_the_named_plugins() -> None:
    q = SchedulingQueue()
    for name in ("fit", "taint"):
        q.add(pod(name), 0, now=0.0, order=1)
    fit, taint = q.pop(2)
    q.failed(fit.uid, now=0.0, plugins=["NodeResourcesFit"], error=False)
    q.failed(taint.uid, now=0.0, plugins=["TaintToleration"], error=False)
    assert q.move_all(now=50.0, helps={"TaintToleration"}) == 1
    assert fit.where is Where.UNSCHEDULABLE and taint.where is Where.ACTIVE


def test_event_while_in_flight_requeues_instead_of_parking() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    (info,) = q.pop(1)
    q.move_all(now=1.0)  # arrives while the attempt is running
    q.failed(info.uid, now=2.0, plugins=["NodeResourcesFit"], error=False)
    assert info.where is Where.BACKOFF


def test_error_backs_off_and_attempts_grow_the_backoff() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    expected = [1.0, 2.0, 4.0, 8.0, 10.0]
    now = 0.0
    for wait in expected:
        (info,) = q.pop(1)
        q.failed(info.uid, now=now, plugins=[], error=True)
        assert info.backoff_until == now + wait
        now += wait
        assert q.flush_backoff(now) == 1


def test_leftover_flush_after_five_minutes() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    (info,) = q.pop(1)
    q.failed(info.uid, now=0.0, plugins=["NodeResourcesFit"], error=False)
    assert q.flush_leftover(now=300.0) == 0
    assert q.flush_leftover(now=300.5) == 1
    assert info.where is Where.ACTIVE


def test_gated_pod_waits_until_its_gates_are_removed() -> None:
    q = SchedulingQueue()
    q.add(pod("a", gates=("example.com/wait",)), 0, now=0.0, order=1)
    assert q.pop(1) == [] and q.counts()["gated"] == 1
    q.update(pod("a"), 0, now=1.0)
    assert names(q.pop(1)) == ["a"]


def test_update_of_a_parked_pod_that_changed_moves_it_and_status_only_does_not() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    (info,) = q.pop(1)
    q.failed(info.uid, now=0.0, plugins=["NodeAffinity"], error=False)
    q.update(pod("a"), 0, now=100.0)  # identical spec and labels: stays parked
    assert info.where is Where.UNSCHEDULABLE
    q.update(pod("a", labels={"tier": "web"}), 0, now=100.0)
    assert info.where is Where.ACTIVE


def test_priority_update_reorders_active_pods() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    q.add(pod("b"), 0, now=0.0, order=2)
    q.update(pod("b"), 10, now=0.0)
    assert names(q.pop(2)) == ["b", "a"]


def test_deleted_pod_leaves_every_sub_queue() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    q.delete("uid-a")
    assert q.pop(1) == [] and "uid-a" not in q


def test_retry_now_does_not_count_the_lost_attempt() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0, now=0.0, order=1)
    (info,) = q.pop(1)
    q.retry_now(info.uid)
    (again,) = q.pop(1)
    assert again.attempts == 1
