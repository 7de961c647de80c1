"""KEP-5501: the PodScheduled condition a PreEnqueue rejection sets, 5 s later, once,
and its clear (services.queue.pod_status), on a FakeClock."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import pytest

from contracts import topology
from contracts.k8s import Event, Pod, PodCondition
from contracts.podstatus import PodStatusPatch
from services.common.clock import FakeClock
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo
from services.queue.cluster_events import NODE_ADD
from services.queue.pod_status import status_messages
from services.queue.profiles import QueueProfile
from services.queue.scheduling_queue import SchedulingQueue
from services.queue.types import SubQueue
from tests.builders import make_node, make_pod
from tests.unit.queue.helpers import DEFAULT, START, add, with_

PLUGIN = "Gate"


@dataclass
class Gate:
    """A PreEnqueue plugin that rejects with the message the test gives (None: lets the
    pod in)."""

    message: str | None = None
    name: str = PLUGIN

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if self.message is None:
            return SUCCESS
        return Status(Code.UnschedulableAndUnresolvable, (self.message,))


@dataclass
class Run:
    queue: SchedulingQueue
    clock: FakeClock
    gate: Gate
    published: list[tuple[float, str, str]] = field(default_factory=list)
    """(seconds since start, "set" / "clear", message) of each patch that came due."""

    def tick(self) -> None:
        for update in self.queue.pod_status.due():
            t = update.at - START
            if update.condition is not None:
                self.published.append((t, "set", update.condition.message or ""))
            else:
                assert update.cleared is not None
                self.published.append((t, "clear", update.cleared.message or ""))


def start(pod: Pod, message: str | None, *, enabled: bool = True) -> Run:
    gate = Gate(message)
    profile = QueueProfile(
        scheduler_name="default-scheduler",
        queue_sort=DEFAULT.queue_sort,
        pre_enqueue=(gate,),
        events={PLUGIN: ()},
    )
    clock = FakeClock(START)
    queue = SchedulingQueue([profile], clock, pre_enqueue_pod_status=enabled)
    add(queue, pod)
    return Run(queue, clock, gate)


def recheck(run: Run, pod: Pod, message: str | None) -> None:
    """PreEnqueue runs again for ``pod`` and says ``message`` (None: it passes)."""
    run.gate.message = message
    info = run.queue.get(pod.metadata.uid)
    assert info is not None
    if info.where is SubQueue.ACTIVE:  # an attempt that errs: on its way to backoffQ
        assert run.queue.pop(1) == [info]
        run.queue.add_unschedulable_if_not_present(info.uid, ())
    else:  # gated or backing off: ForceActivate
        run.queue.activate([info.uid])
    assert info.gated == (message is not None)


def condition(reason: str, message: str) -> PodCondition:
    return PodCondition(type="PodScheduled", status="False", reason=reason, message=message)


POD = make_pod("p")
SHOWING_A = with_(POD, status__conditions=[condition("NotReadyForScheduling", "A")])
UNSCHEDULABLE = with_(POD, status__conditions=[condition("Unschedulable", "0/3 nodes")])

Step = tuple[float, str | None]
"""(seconds since start, what PreEnqueue says then: a message, or None: it passes)."""


@pytest.mark.parametrize(
    ("pod", "steps", "published"),
    [
        pytest.param(POD, [(0, "A")], [(5, "set", "A")], id="rejected: published at 5 s"),
        pytest.param(POD, [(0, "A"), (3, None)], [], id="passes within 5 s: cancelled"),
        pytest.param(
            POD, [(0, "A"), (2, "B")], [(5, "set", "B")], id="message changes: overwritten"
        ),
        pytest.param(
            POD,
            [(0, "A"), (2, "A"), (7, "A"), (12, "A")],
            [(5, "set", "A")],
            id="identical message: never re-sent",
        ),
        pytest.param(
            POD,
            [(0, "A"), (6, "B")],
            [(5, "set", "A"), (11, "set", "B")],
            id="a new message after publication: published 5 s later",
        ),
        pytest.param(
            POD,
            [(0, "A"), (6, None)],
            [(5, "set", "A"), (11, "clear", "A")],
            id="passes after a published rejection: delayed clear",
        ),
        pytest.param(
            POD,
            [(0, "A"), (6, None), (8, "A")],
            [(5, "set", "A")],
            id="rejected again as shown before the clear: clear cancelled",
        ),
        pytest.param(
            POD,
            [(0, None), (1, "A"), (3, None), (4, "A")],
            [(9, "set", "A")],
            id="flapping: a cancelled patch starts over",
        ),
        pytest.param(
            POD,
            [(0, "A"), (6, "")],
            [(5, "set", "A")],
            id="a rejection without a message changes nothing",
        ),
        pytest.param(SHOWING_A, [(0, "A")], [], id="the pod already shows the message"),
        pytest.param(
            SHOWING_A,
            [(0, "B")],
            [(5, "set", "B")],
            id="the pod shows another message",
        ),
        pytest.param(
            SHOWING_A, [(0, None)], [(5, "clear", "A")], id="the pod's condition is cleared"
        ),
        pytest.param(UNSCHEDULABLE, [(0, None)], [], id="a condition PreEnqueue did not set stays"),
        pytest.param(
            UNSCHEDULABLE,
            [(0, "A")],
            [(5, "set", "A")],
            id="a condition PreEnqueue did not set is replaced",
        ),
    ],
)
def test_pre_enqueue_outcomes_to_conditions(
    pod: Pod, steps: list[Step], published: list[tuple[float, str, str]]
) -> None:
    run = start(pod, steps[0][1])
    for now in range(30):  # the queue's timer ticks every second
        run.clock.set_time(START + now)
        for t, message in steps[1:]:
            if t == now:
                recheck(run, pod, message)
        run.tick()
    assert run.published == published


def test_off_the_gate_publishes_nothing() -> None:
    run = start(POD, "A", enabled=False)
    run.clock.set_time(START + 10)
    recheck(run, POD, None)
    run.clock.set_time(START + 20)
    assert run.queue.pod_status.due() == [] and len(run.queue.pod_status) == 0
    info = run.queue.get(POD.metadata.uid)
    assert info is not None and info.last_pre_enqueue_rejection_message is None


def test_a_pod_that_leaves_the_queue_is_not_patched() -> None:
    run = start(POD, "A")
    run.queue.delete(POD.metadata.uid)
    run.clock.set_time(START + 10)
    assert run.queue.pod_status.due() == []


def test_scheduling_gates_keep_the_api_servers_condition() -> None:
    """The SchedulingGates plugin says what the API server's SchedulingGated condition
    says: nothing to patch, with or without that condition in the pod file. Once the
    gates go, the condition is cleared 5 s later unless the pod was bound."""
    clock = FakeClock(START)
    queue = SchedulingQueue([DEFAULT], clock)
    gated = make_pod("g", scheduling_gates=("example.com/wait",))
    shown = with_(
        make_pod("s", scheduling_gates=("example.com/wait",)),
        status__conditions=[
            condition("SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
        ],
    )
    add(queue, gated, shown)
    assert queue.counts()["gated"] == 2
    clock.set_time(START + 60)
    assert queue.pod_status.due() == []
    queue.update(gated, make_pod("g"), priority=0)
    queue.update(shown, with_(make_pod("s"), status=shown.status), priority=0)
    assert [i.pod.metadata.name for i in queue.pop(2)] == ["g", "s"]
    queue.done("default-s-uid")  # bound: its condition is PodScheduled True now
    clock.set_time(START + 64)
    assert queue.pod_status.due() == []
    clock.set_time(START + 65)
    [update] = queue.pod_status.due()
    assert update.pod.metadata.name == "g" and update.condition is None
    assert update.cleared is not None and update.cleared.reason == "SchedulingGated"


def test_the_messages_a_client_applies() -> None:
    run = start(make_pod("p", namespace="team"), "waiting for 2 more pods")
    run.clock.set_time(START + 5)
    [update] = run.queue.pod_status.due()
    messages = status_messages([update])
    assert [m.routing_key for m in messages] == ["status.team", "event.team"]
    assert {m.exchange for m in messages} == {topology.DECISIONS.name}
    patch = msgspec.json.decode(messages[0].body, type=PodStatusPatch)
    assert (patch.namespace, patch.name, patch.uid, patch.plugin) == (
        "team",
        "p",
        "team-p-uid",
        PLUGIN,
    )
    assert patch.condition == PodCondition(
        type="PodScheduled",
        status="False",
        reason="NotReadyForScheduling",
        message="waiting for 2 more pods",
        last_transition_time="2023-11-14T22:13:25Z",
    )
    assert msgspec.json.decode(messages[0].body)["kind"] == "PodStatusPatch"
    event = msgspec.json.decode(messages[1].body, type=Event)
    assert (event.reason, event.type, event.message) == (
        "NotReadyForScheduling",
        "Normal",
        "waiting for 2 more pods",
    )
    assert event.involved_object.uid == "team-p-uid"
    # The clear: the condition removed, no Event.
    recheck(run, make_pod("p", namespace="team"), None)
    run.clock.set_time(START + 10)
    [clear] = status_messages(run.queue.pod_status.due())
    decoded = msgspec.json.decode(clear.body, type=PodStatusPatch)
    assert decoded.condition is None and decoded.cleared == patch.condition


def test_the_patch_names_the_pod_as_it_is_when_it_comes_due() -> None:
    """The pod may change while its patch waits (labels, resourceVersion): the patch
    and its Event are built from the pod the queue holds when the 5 s are over."""
    run = start(POD, "A")
    run.queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n"))
    newer = with_(POD, metadata__resource_version="7")
    run.queue.update(POD, newer, priority=0)
    run.clock.set_time(START + 5)
    [update] = run.queue.pod_status.due()
    assert update.pod is newer and update.condition is not None
