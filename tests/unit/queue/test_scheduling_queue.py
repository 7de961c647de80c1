"""The queue core: order, updates, gates, the in-flight rule, moves and the leftover
flush, with time driven by hand."""

from __future__ import annotations

import pytest

from contracts.k8s import Toleration
from services.queue.cluster_events import ASSIGNED_POD_DELETE, NODE_ADD
from services.queue.types import SubQueue
from tests.builders import make_node, make_pod
from tests.unit.queue.helpers import add, make_queue, names, park, qos_profile, where

# -- activeQ order ------------------------------------------------------------------------


def test_higher_priority_first_then_earlier_timestamp_then_arrival() -> None:
    queue, clock = make_queue()
    add(queue, make_pod("low-early", priority=0), order=1)
    clock.step(5)
    add(queue, make_pod("high-late", priority=100), order=2)
    clock.step(-3)  # an earlier timestamp than high-late, later than low-early
    add(queue, make_pod("low-late", priority=0), order=3)
    add(queue, make_pod("low-same-time", priority=0), order=4)
    assert names(queue.pop(10)) == ["high-late", "low-early", "low-late", "low-same-time"]


def test_a_high_priority_pod_behind_a_10k_backlog_is_popped_next() -> None:
    queue, _ = make_queue()
    for i in range(10_000):
        add(queue, make_pod(f"low-{i}", priority=0), order=i)
    assert names(queue.pop(3)) == ["low-0", "low-1", "low-2"]
    add(queue, make_pod("urgent", priority=1_000), order=10_000)
    assert names(queue.pop(1)) == ["urgent"]
    assert queue.counts()["active"] == 9_997


def test_qos_sort_breaks_priority_ties_by_qos_class() -> None:
    queue, _ = make_queue(profiles=[qos_profile()])
    best_effort = make_pod("best-effort", containers=1)
    burstable = make_pod("burstable", requests={"cpu": "1"})
    guaranteed = make_pod("guaranteed", qos_class="Guaranteed")
    add(queue, best_effort, burstable, guaranteed, make_pod("high", priority=5, containers=1))
    assert names(queue.pop(4)) == ["high", "guaranteed", "burstable", "best-effort"]


def test_pop_marks_pods_in_flight_and_counts_the_attempt() -> None:
    queue, _ = make_queue()
    add(queue, *[make_pod(f"p{i}") for i in range(5)])
    first = queue.pop(2)
    assert names(first) == ["p0", "p1"]
    assert all(i.where is SubQueue.IN_FLIGHT and i.attempts == 1 for i in first)
    assert queue.counts() == {
        "active": 3,
        "backoff": 0,
        "unschedulable": 0,
        "gated": 0,
        "inflight": 2,
    }
    assert queue.in_flight_attempt("default-p0-uid") == 1


# -- updates and deletes --------------------------------------------------------------


def test_an_update_repositions_a_pod_in_active_q() -> None:
    queue, _ = make_queue()
    a, b = make_pod("a"), make_pod("b")
    add(queue, a, b)
    queue.update(b, make_pod("b", labels={"x": "y"}), priority=10)
    popped = queue.pop(2)
    assert names(popped) == ["b", "a"]
    assert popped[0].pod.metadata.labels == {"x": "y"}


def test_an_update_of_a_pod_in_backoff_q_keeps_it_there() -> None:
    queue, _ = make_queue()
    pod = make_pod("a")
    info = park(queue, pod, "NodeResourcesFit")
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    assert info.where is SubQueue.BACKOFF
    queue.update(pod, make_pod("a", labels={"v": "2"}), priority=0)
    assert info.where is SubQueue.BACKOFF and info.pod.metadata.labels == {"v": "2"}


def test_status_or_annotation_updates_of_a_parked_pod_do_not_move_it() -> None:
    queue, clock = make_queue()
    pod = make_pod("a")
    info = park(queue, pod, "TaintToleration")
    clock.step(60)
    queue.update(pod, make_pod("a", phase="Pending", nominated_node_name=""), priority=0)
    assert info.where is SubQueue.UNSCHEDULABLE


def test_an_update_that_may_help_moves_a_parked_pod() -> None:
    queue, clock = make_queue()
    pod = make_pod("a")
    info = park(queue, pod, "TaintToleration")
    clock.step(60)  # backoff over: straight to activeQ
    tolerant = make_pod("a", tolerations=[Toleration(key="k", operator="Exists")])
    queue.update(pod, tolerant, priority=0)
    assert info.where is SubQueue.ACTIVE
    assert queue.incoming[("active", "UnschedulablePodUpdatePodToleration")] == 1


def test_an_update_of_a_pod_rejected_by_an_unrelated_plugin_keeps_it_parked() -> None:
    queue, clock = make_queue()
    pod = make_pod("a")
    info = park(queue, pod, "NodeAffinity")
    clock.step(60)
    queue.update(pod, make_pod("a", labels={"tier": "web"}), priority=0)
    assert info.where is SubQueue.UNSCHEDULABLE


def test_deleting_a_pod_removes_it_from_every_sub_queue() -> None:
    queue, _ = make_queue()
    active, parked, flying = make_pod("active"), make_pod("parked"), make_pod("flying")
    park(queue, parked, "NodeResourcesFit")
    add(queue, flying)
    queue.pop(1)
    add(queue, active)
    for pod in (active, parked, flying):
        queue.delete(pod.metadata.uid)
        assert pod.metadata.uid not in queue
    assert queue.pop(5) == []
    assert sum(queue.counts().values()) == 0
    # The result of the forgotten attempt is ignored.
    assert queue.add_unschedulable_if_not_present(flying.metadata.uid, ["X"]) is None


def test_a_priority_change_repositions_the_pod() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"), make_pod("b"))
    queue.set_priority("default-b-uid", 7)
    assert names(queue.pop(2)) == ["b", "a"]


# -- gates ----------------------------------------------------------------------------


def test_a_gated_pod_waits_until_its_gates_are_removed() -> None:
    queue, clock = make_queue()
    gated = make_pod("a", scheduling_gates=("example.com/wait",))
    add(queue, gated)
    assert queue.pop(1) == [] and queue.counts()["gated"] == 1
    info = queue.get("default-a-uid")
    assert info is not None and info.gating_plugin == "SchedulingGates"
    assert info.message == "Scheduling is blocked due to non-empty scheduling gates"
    # Events never un-gate it, nor does the leftover flush.
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    clock.step(3600)
    queue.flush_unschedulable_pods_leftover()
    assert info.where is SubQueue.GATED
    # A label change keeps it gated; removing the gates brings it in.
    relabelled = make_pod("a", scheduling_gates=("example.com/wait",), labels={"x": "y"})
    queue.update(gated, relabelled, priority=0)
    assert info.where is SubQueue.GATED
    queue.update(relabelled, make_pod("a", labels={"x": "y"}), priority=0)
    assert info.where is SubQueue.ACTIVE and names(queue.pop(1)) == ["a"]
    assert queue.incoming[("unschedulable", "UnschedulablePodAdd")] == 1
    assert queue.incoming[("active", "UnschedulablePodUpdatePodSchedulingGatesEliminated")] == 1


def test_removing_one_of_two_gates_keeps_the_pod_gated() -> None:
    queue, _ = make_queue()
    pod = make_pod("a", scheduling_gates=("one", "two"))
    add(queue, pod)
    queue.update(pod, make_pod("a", scheduling_gates=("two",)), priority=0)
    assert where(queue, pod) is SubQueue.GATED


# -- failures and the in-flight rule --------------------------------------------------


def test_a_rejected_pod_is_parked_with_its_plugins() -> None:
    queue, _ = make_queue()
    info = park(queue, make_pod("a"), "NodeResourcesFit", "TaintToleration")
    assert info.unschedulable_plugins == {"NodeResourcesFit", "TaintToleration"}
    assert info.unschedulable_count == 1 and info.consecutive_errors_count == 0
    assert queue.counts()["unschedulable"] == 1
    assert queue.incoming[("unschedulable", "ScheduleAttemptFailure")] == 1


def test_an_error_backs_off_instead_of_parking() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"))
    queue.pop(1)
    assert queue.add_unschedulable_if_not_present("default-a-uid", []) is SubQueue.BACKOFF
    info = queue.get("default-a-uid")
    assert info is not None and info.consecutive_errors_count == 1
    assert queue.incoming[("backoff", "ScheduleAttemptFailure")] == 1


def test_an_event_that_may_help_while_in_flight_requeues_instead_of_parking() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a", requests={"cpu": "2"}))
    queue.pop(1)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("big"))
    assert queue.add_unschedulable_if_not_present("default-a-uid", ["NodeResourcesFit"]) in (
        SubQueue.BACKOFF,
        SubQueue.ACTIVE,
    )


def test_an_event_seen_in_flight_that_cannot_help_still_parks() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a", requests={"cpu": "8"}))
    queue.pop(1)
    # The node is too small for the pod even empty: NodeResourcesFit's hint says skip.
    small = make_node("small", allocatable={"cpu": "1", "pods": 10})
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, small)
    where_to = queue.add_unschedulable_if_not_present("default-a-uid", ["NodeResourcesFit"])
    assert where_to is SubQueue.UNSCHEDULABLE


def test_events_before_the_pop_do_not_count_for_the_attempt() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"), make_pod("b"))
    queue.pop(1)  # a in flight
    queue.move_all_to_active_or_backoff_queue(
        ASSIGNED_POD_DELETE, make_pod("x", node_name="n"), None
    )
    queue.pop(1)  # b popped after the event
    assert queue.add_unschedulable_if_not_present("default-b-uid", ["NodeResourcesFit"]) is (
        SubQueue.UNSCHEDULABLE
    )
    assert queue.add_unschedulable_if_not_present("default-a-uid", ["NodeResourcesFit"]) is (
        SubQueue.BACKOFF
    )


def test_an_own_update_while_in_flight_counts_for_the_attempt() -> None:
    queue, _ = make_queue()
    pod = make_pod("a")
    add(queue, pod)
    queue.pop(1)
    tolerant = make_pod("a", tolerations=[Toleration(key="k", operator="Exists")])
    queue.update(pod, tolerant, priority=0)
    info = queue.get("default-a-uid")
    assert info is not None and info.pod is tolerant  # requeued as its latest version
    assert queue.add_unschedulable_if_not_present(info.uid, ["TaintToleration"]) is SubQueue.BACKOFF


def test_a_pending_plugin_queue_hint_skips_backoff() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"))
    queue.pop(1)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    where_to = queue.add_unschedulable_if_not_present(
        "default-a-uid", [], pending_plugins=["NodeAffinity"]
    )
    assert where_to is SubQueue.ACTIVE


def test_a_stale_or_unknown_result_is_ignored() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"))
    assert queue.add_unschedulable_if_not_present("default-a-uid", ["X"]) is None
    assert queue.add_unschedulable_if_not_present("nobody", ["X"]) is None


def test_done_removes_the_bound_pod() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"))
    queue.pop(1)
    queue.done("default-a-uid")
    assert "default-a-uid" not in queue and queue.counts()["inflight"] == 0


def test_retry_puts_a_lost_dispatch_back_without_reusing_its_attempt() -> None:
    queue, _ = make_queue()
    add(queue, make_pod("a"), make_pod("b"))
    (info,) = queue.pop(1)
    queue.retry(info.uid)
    assert info.where is SubQueue.ACTIVE
    (again,) = queue.pop(1)
    assert again is info and again.attempts == 2


# -- moves ----------------------------------------------------------------------------


def test_a_move_only_helps_pods_rejected_by_a_plugin_that_registered_the_event() -> None:
    queue, clock = make_queue()
    fit = park(queue, make_pod("fit", requests={"cpu": "1"}), "NodeResourcesFit")
    ports = park(queue, make_pod("ports"), "NodePorts")
    affinity = park(queue, make_pod("affinity"), "NodeAffinity")
    clock.step(60)
    labelled = make_node("n", labels={"zone": "a"})
    relabelled = make_node("n", labels={"zone": "b"})
    from services.queue.cluster_events import node_scheduling_properties_change

    (event,) = node_scheduling_properties_change(relabelled, labelled)
    moved = queue.move_all_to_active_or_backoff_queue(event, labelled, relabelled)
    # NodeAffinity registered node label updates (its hint: the pod has no required
    # affinity, so any node matches and did before → skip); Fit and NodePorts did not.
    assert moved == 0
    assert (fit.where, ports.where, affinity.where) == (SubQueue.UNSCHEDULABLE,) * 3
    moved = queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, labelled)
    assert moved == 3


def test_an_event_no_plugin_registered_moves_nothing() -> None:
    from services.framework.api.events import ActionType, ClusterEvent, EventResource

    queue, clock = make_queue()
    info = park(queue, make_pod("a"), "NodeResourcesFit")
    clock.step(60)
    heartbeat = ClusterEvent(EventResource.Node, ActionType.UpdateNodeCondition)
    assert not queue.hints.is_event_of_interest(heartbeat)
    assert queue.move_all_to_active_or_backoff_queue(heartbeat, None, None) == 0
    assert info.where is SubQueue.UNSCHEDULABLE


def test_a_move_during_backoff_goes_to_backoff_q_then_flushes_after_it() -> None:
    queue, clock = make_queue(pop_from_backoff=False)
    info = park(queue, make_pod("a"), "NodeResourcesFit")
    clock.step(0.5)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    assert info.where is SubQueue.BACKOFF
    assert queue.flush_backoff_q_completed() == 0
    clock.step(0.5)  # exactly at the end of the 1 s backoff: still backing off
    assert queue.flush_backoff_q_completed() == 0
    clock.step(0.01)
    assert queue.flush_backoff_q_completed() == 1 and info.where is SubQueue.ACTIVE
    assert queue.incoming[("active", "BackoffComplete")] == 1


def test_a_move_after_the_backoff_goes_straight_to_active_q() -> None:
    queue, clock = make_queue()
    info = park(queue, make_pod("a"), "NodeResourcesFit")
    clock.step(5)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    assert info.where is SubQueue.ACTIVE
    assert queue.incoming[("active", "NodeAdd")] == 1


def test_a_hint_that_raises_counts_as_queue() -> None:
    from services.framework.api.events import (
        ActionType,
        ClusterEvent,
        ClusterEventWithHint,
        EventResource,
    )
    from services.queue.profiles import QueueProfile
    from tests.unit.queue.helpers import DEFAULT

    def broken(pod: object, old: object, new: object) -> object:
        raise RuntimeError("bug")

    event = ClusterEvent(EventResource.Node, ActionType.Add)
    profile = QueueProfile(
        DEFAULT.scheduler_name,
        DEFAULT.queue_sort,
        DEFAULT.pre_enqueue,
        {"Broken": [ClusterEventWithHint(event, broken)]},  # type: ignore[arg-type]
    )
    queue, clock = make_queue(profiles=[profile])
    info = park(queue, make_pod("a"), "Broken")
    clock.step(5)
    assert queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n")) == 1
    assert info.where is SubQueue.ACTIVE


@pytest.mark.parametrize(
    ("answer", "hint"),
    [("queue", "Queue"), ("skip", "QueueSkip"), ("raise", "Error")],
)
def test_each_hint_call_is_timed_with_its_result(answer: str, hint: str) -> None:
    """``scheduler_queueing_hint_execution_duration_seconds{plugin,event,hint}``."""
    from services.framework.api.events import (
        ActionType,
        ClusterEvent,
        ClusterEventWithHint,
        EventResource,
        QueueingHint,
    )
    from services.queue.metrics import QueueMetrics
    from services.queue.profiles import QueueProfile
    from tests.unit.queue.helpers import DEFAULT

    def fn(pod: object, old: object, new: object) -> object:
        if answer == "raise":
            raise RuntimeError("bug")
        return QueueingHint.Queue if answer == "queue" else QueueingHint.QueueSkip

    event = ClusterEvent(EventResource.Node, ActionType.Add)
    profile = QueueProfile(
        DEFAULT.scheduler_name,
        DEFAULT.queue_sort,
        DEFAULT.pre_enqueue,
        {"Plugin": [ClusterEventWithHint(event, fn)]},  # type: ignore[arg-type]
    )
    queue, clock = make_queue(profiles=[profile])
    metrics = QueueMetrics(queue)
    park(queue, make_pod("a"), "Plugin")
    clock.step(5)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    labels = {"plugin": "Plugin", "event": "NodeAdd", "hint": hint}
    count = metrics.registry.get_sample_value(
        "scheduler_queueing_hint_execution_duration_seconds_count", labels
    )
    assert count == 1


def test_pre_check_narrows_the_pods_an_event_may_move() -> None:
    queue, clock = make_queue()
    low = park(queue, make_pod("low", priority=1), "NodeResourcesFit")
    high = park(queue, make_pod("high", priority=9), "NodeResourcesFit")
    clock.step(5)
    gone = make_pod("victim", node_name="n")
    queue.move_all_to_active_or_backoff_queue(
        ASSIGNED_POD_DELETE, gone, None, pre_check=lambda i: i.priority <= 5
    )
    assert (low.where, high.where) == (SubQueue.ACTIVE, SubQueue.UNSCHEDULABLE)


# -- the leftover flush ---------------------------------------------------------------


def test_pods_parked_over_five_minutes_are_retried_by_the_leftover_flush() -> None:
    queue, clock = make_queue()
    info = park(queue, make_pod("a"), "NodeResourcesFit")
    clock.step(300)
    assert queue.flush_unschedulable_pods_leftover() == 0  # not longer than 5 minutes yet
    clock.step(0.5)
    assert queue.flush_unschedulable_pods_leftover() == 1
    assert info.where is SubQueue.ACTIVE and info.was_flushed_from_unschedulable
    assert queue.incoming[("active", "UnschedulableTimeout")] == 1


@pytest.mark.parametrize("rejectors", [("NodeResourcesFit",), ("SomeOutOfTreePlugin",)])
def test_the_leftover_flush_moves_pods_whatever_rejected_them(rejectors: tuple[str, ...]) -> None:
    queue, clock = make_queue()
    info = park(queue, make_pod("a"), *rejectors)
    clock.step(301)
    queue.flush_unschedulable_pods_leftover()
    assert info.where is SubQueue.ACTIVE


# -- reading --------------------------------------------------------------------------


def test_heads_show_each_sub_queue_in_leave_order() -> None:
    queue, clock = make_queue()
    park(queue, make_pod("parked-1"), "NodeResourcesFit")
    clock.step(1)
    park(queue, make_pod("parked-2"), "NodeResourcesFit")
    add(queue, make_pod("gated", scheduling_gates=("g",)))
    add(queue, make_pod("low", priority=1), make_pod("high", priority=9))
    heads = queue.heads(20)
    assert names(heads[SubQueue.ACTIVE]) == ["high", "low"]
    assert names(heads[SubQueue.UNSCHEDULABLE]) == ["parked-1", "parked-2"]
    assert names(heads[SubQueue.GATED]) == ["gated"]
    assert names(queue.heads(1)[SubQueue.ACTIVE]) == ["high"]
