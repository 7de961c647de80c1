"""The event handlers' bookkeeping: which pods are the queue's, bindings, deletions,
re-created pods, priority classes, the nominator, and converging after a gap."""

from __future__ import annotations

from contracts.k8s import ObjectMeta, PriorityClass
from services.common.store import Nomination
from services.queue.eventhandlers import ClusterState, EventHandlers
from services.queue.nominator import Nominator
from services.queue.types import SubQueue
from tests.builders import container, host_port, make_node, make_pod
from tests.unit.queue.helpers import logged, make_queue, with_


def setup() -> tuple[EventHandlers, Nominator]:
    queue, _ = make_queue()
    nominator = Nominator()
    return EventHandlers(queue, nominator), nominator


def test_only_pending_pods_of_our_profiles_are_queued() -> None:
    handlers, _ = setup()
    for pod in (
        make_pod("ours"),
        make_pod("theirs", scheduler_name="other-scheduler"),
        make_pod("bound", node_name="n1"),
        make_pod("done", phase="Succeeded"),
        make_pod("leaving", deletion_timestamp="2024-01-01T00:00:00Z"),
    ):
        handlers.handle(logged(pod))
    assert [i.pod.metadata.name for i in handlers.queue.pods()] == ["ours"]
    assert set(handlers.assigned) == {"default-bound-uid"}


def test_a_bound_pod_leaves_the_queue_and_the_nominator() -> None:
    handlers, nominator = setup()
    pod = make_pod("a", nominated_node_name="n1")
    handlers.handle(logged(pod))
    assert nominator.nominations == {"default-a-uid": Nomination("n1", 0)}
    handlers.handle(logged(with_(pod, spec__node_name="n1"), "MODIFIED"))
    assert "default-a-uid" not in handlers.queue
    assert nominator.nominations == {}
    assert "default-a-uid" in handlers.assigned


def test_a_deleted_pod_leaves_every_queue_and_the_nominator() -> None:
    handlers, nominator = setup()
    pod = make_pod("a", nominated_node_name="n1", priority=5)
    handlers.handle(logged(pod))
    handlers.queue.pop(1)
    handlers.handle(logged(pod, "DELETED"))
    assert "default-a-uid" not in handlers.queue
    assert handlers.queue.counts()["inflight"] == 0
    assert nominator.nominations == {}


def test_a_pod_being_deleted_or_handed_to_another_scheduler_leaves_the_queue() -> None:
    handlers, _ = setup()
    a, b = make_pod("a"), make_pod("b")
    handlers.handle(logged(a))
    handlers.handle(logged(b))
    handlers.handle(
        logged(with_(a, metadata__deletion_timestamp="2024-01-01T00:00:00Z"), "MODIFIED")
    )
    handlers.handle(logged(with_(b, spec__scheduler_name="other"), "MODIFIED"))
    assert len(handlers.queue) == 0


def test_a_pod_recreated_under_its_name_replaces_the_old_one() -> None:
    handlers, _ = setup()
    handlers.handle(logged(make_pod("a", uid="old")))
    handlers.handle(logged(make_pod("a", uid="new"), "MODIFIED"))
    assert [i.uid for i in handlers.queue.pods()] == ["new"]


def test_an_identical_update_changes_nothing() -> None:
    handlers, _ = setup()
    pod = make_pod("a")
    handlers.handle(logged(pod))
    version = handlers.queue.version
    handlers.handle(logged(pod, "MODIFIED"))
    assert handlers.queue.version == version


def test_the_nominator_follows_nominated_node_name() -> None:
    handlers, nominator = setup()
    pod = make_pod("a", priority=3)
    handlers.handle(logged(pod))
    assert nominator.nominations == {}
    nominated = with_(pod, status__nominated_node_name="n1")
    handlers.handle(logged(nominated, "MODIFIED"))
    assert nominator.nominations == {"default-a-uid": Nomination("n1", 3)}
    moved = with_(nominated, status__nominated_node_name="n2")
    handlers.handle(logged(moved, "MODIFIED"))
    assert nominator.nominations == {"default-a-uid": Nomination("n2", 3)}
    handlers.handle(logged(with_(moved, status__nominated_node_name=None), "MODIFIED"))
    assert nominator.nominations == {}


def test_a_nomination_made_by_preemption_survives_an_unrelated_update() -> None:
    handlers, nominator = setup()
    pod = make_pod("a", priority=3)
    handlers.handle(logged(pod))
    nominator.load({"default-a-uid": Nomination("n1", 3)})  # preemption wrote it
    handlers.handle(logged(with_(pod, metadata__labels={"x": "y"}), "MODIFIED"))
    assert nominator.nominations == {"default-a-uid": Nomination("n1", 3)}


def test_a_released_nomination_moves_lower_or_equal_priority_pods() -> None:
    handlers, _ = setup()
    queue = handlers.queue
    port = [container(ports=[host_port(80)])]
    for name, priority in (("low", 1), ("equal", 5), ("high", 9)):
        handlers.handle(logged(make_pod(name, priority=priority, requests=port)))
    for info in queue.pop(3):
        queue.add_unschedulable_if_not_present(info.uid, ["NodePorts"])
    queue.clock.step(30)  # type: ignore[attr-defined]
    # The nominated pod held port 80 on n1 for the pods of lower or equal priority.
    nominated = make_pod("preemptor", priority=5, nominated_node_name="n1", requests=port)
    handlers.handle(logged(nominated))
    handlers.handle(logged(nominated, "DELETED"))
    state = {i.pod.metadata.name: i.where for i in queue.pods()}
    assert state == {
        "low": SubQueue.ACTIVE,
        "equal": SubQueue.ACTIVE,
        "high": SubQueue.UNSCHEDULABLE,
    }


def test_priority_classes_set_and_change_the_priority() -> None:
    handlers, _ = setup()
    handlers.handle(logged_class("high", 1000))
    handlers.handle(logged(make_pod("a")))
    handlers.handle(logged(with_(make_pod("b"), spec__priority_class_name="high")))
    handlers.handle(logged(with_(make_pod("c"), spec__priority_class_name="later")))
    priorities = {i.pod.metadata.name: i.priority for i in handlers.queue.pods()}
    assert priorities == {"a": 0, "b": 1000, "c": 0}
    handlers.handle(logged_class("later", 50))
    handlers.handle(logged_class("default", 7, global_default=True))
    priorities = {i.pod.metadata.name: i.priority for i in handlers.queue.pods()}
    assert priorities == {"a": 7, "b": 1000, "c": 50}
    assert [i.pod.metadata.name for i in handlers.queue.pop(3)] == ["b", "c", "a"]


def test_reserved_values_and_system_classes() -> None:
    handlers, _ = setup()
    handlers.handle(logged_class("too-high", 2_000_000_000))
    handlers.handle(logged(with_(make_pod("a"), spec__priority_class_name="too-high")))
    handlers.handle(logged(with_(make_pod("b"), spec__priority_class_name="system-node-critical")))
    priorities = {i.pod.metadata.name: i.priority for i in handlers.queue.pods()}
    assert priorities == {"a": 0, "b": 2_000_001_000}


def test_the_lowest_global_default_wins() -> None:
    handlers, _ = setup()
    handlers.handle(logged_class("d1", 10, global_default=True))
    handlers.handle(logged_class("d2", 5, global_default=True))
    handlers.handle(logged(make_pod("a")))
    assert [i.priority for i in handlers.queue.pods()] == [5]


def test_resync_converges_on_the_store_as_if_the_log_had_been_applied() -> None:
    handlers, nominator = setup()
    queue = handlers.queue
    node = make_node("n1", allocatable={"cpu": "1", "pods": 110})
    handlers.handle(logged(node))
    handlers.handle(logged(make_pod("gone")))
    handlers.handle(logged(make_pod("big", requests={"cpu": "2"})))
    for info in queue.pop(2):
        queue.add_unschedulable_if_not_present(info.uid, ["NodeResourcesFit"])
    queue.clock.step(30)  # type: ignore[attr-defined]
    nominator.load({"default-gone-uid": Nomination("n1", 0)})
    # Meanwhile (missed entries): the node grew, "gone" was deleted, "new" arrived.
    state = ClusterState(
        pods=[make_pod("big", requests={"cpu": "2"}), make_pod("new")],
        nodes=[make_node("n1", allocatable={"cpu": "4", "pods": 110})],
        leases={"default-new-uid": 3},
    )
    handlers.resync(state)
    by_name = {i.pod.metadata.name: i for i in queue.pods()}
    assert set(by_name) == {"big", "new"}
    assert by_name["big"].where is SubQueue.ACTIVE  # moved by the NodeUpdateNodeAllocatable
    assert by_name["new"].attempts == 3  # its next attempt is the 4th
    assert nominator.nominations == {}


def logged_class(name: str, value: int, *, global_default: bool = False):  # type: ignore[no-untyped-def]
    return logged(
        PriorityClass(metadata=ObjectMeta(name=name), value=value, global_default=global_default)
    )
