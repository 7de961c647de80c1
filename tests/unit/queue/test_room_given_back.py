"""The queue's side of a pod giving its room back and of PodsToActivate: upstream's
``PriorityQueue.Activate`` (parked or backing-off pods to activeQ, an in-flight pod
requeued when its attempt fails), ``handleBindingCycleError``'s move (an assigned
pod's deletion, the rejected pod itself left out), and gang members popped early from
backoffQ, which go alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

from contracts import topology
from contracts.k8s import POD_GROUP_LABEL, Pod
from contracts.messages import AttemptResult, ResultBatch, ScheduleRequest
from services.common.bus import Message
from services.queue.cluster_events import ASSIGNED_POD_DELETE
from services.queue.types import SubQueue
from tests.builders import make_pod
from tests.unit.queue.helpers import add, make_queue, names, park, where, with_
from tests.unit.queue.service_support import Harness


def member(name: str, group: str = "g") -> Pod:
    return with_(make_pod(name), metadata__labels={POD_GROUP_LABEL: group})


# -- Activate ------------------------------------------------------------------------


@dataclass(frozen=True)
class ActivateCase:
    name: str
    place: str
    """Where the pod is when it is activated: parked, backoff, active, in_flight, gone."""
    moved: int
    then: SubQueue | None


ACTIVATE_CASES = [
    ActivateCase("a parked pod goes to activeQ", "parked", 1, SubQueue.ACTIVE),
    ActivateCase("a backing-off pod goes to activeQ", "backoff", 1, SubQueue.ACTIVE),
    ActivateCase("a pod in activeQ stays", "active", 0, SubQueue.ACTIVE),
    ActivateCase("an unknown pod is ignored", "gone", 0, None),
    ActivateCase("a pod in flight is requeued when it fails", "in_flight", 0, SubQueue.BACKOFF),
]


@pytest.mark.parametrize("case", ACTIVATE_CASES, ids=[c.name for c in ACTIVATE_CASES])
def test_activate(case: ActivateCase) -> None:
    queue, _ = make_queue()
    pod = make_pod("p", requests={"cpu": "1"})
    uid = pod.metadata.uid or ""
    match case.place:
        case "parked":
            park(queue, pod, "NodeResourcesFit")
        case "backoff":
            add(queue, pod)
            queue.pop(1)
            queue.add_unschedulable_if_not_present(uid, ())  # an error: backoffQ
            assert where(queue, pod) is SubQueue.BACKOFF
        case "active":
            add(queue, pod)
        case "in_flight":
            add(queue, pod)
            queue.pop(1)
    assert queue.activate([uid]) == case.moved
    if case.place == "in_flight":
        # Rejected by a plugin no event helped: without the activation it would park.
        queue.add_unschedulable_if_not_present(uid, ["NodeResourcesFit"])
    assert where(queue, pod) is case.then


# -- the room given back ---------------------------------------------------------------


async def result(harness: Harness, request: ScheduleRequest, outcome: str, **extra: Any) -> None:
    """The attempt ``request`` ended ``outcome`` on n1 (``extra``: the other fields)."""
    finished = AttemptResult(
        uid=request.uid,
        namespace="default",
        name=request.name,
        attempt=request.attempt,
        outcome=outcome,  # type: ignore[arg-type]
        node="n1",
        **extra,
    )
    body = msgspec.json.encode(ResultBatch(results=[finished]))
    await harness.bus.publish([Message(topology.RESULTS.name, topology.RESULTS_KEY, body)])
    await harness.settle()


@pytest.mark.parametrize(
    ("outcome", "itself"),
    [("unschedulable", SubQueue.UNSCHEDULABLE), ("error", SubQueue.BACKOFF)],
)
async def test_a_forgotten_assumption_moves_the_pods_its_room_may_help(
    harness: Harness, outcome: str, itself: SubQueue
) -> None:
    """A binder's failed result with ``forgotten``: a pod parked on NodeResourcesFit
    moves (an assigned pod's deletion frees CPU); the failed pod is left where its
    failure put it when a plugin rejected it; the count goes to the schedulers."""
    big = make_pod("big", requests={"cpu": "2"})
    waiting = make_pod("w", requests={"cpu": "1"})
    await harness.apply(big, waiting)
    first = {r.name: r for r in harness.requests}
    await harness.answer((first["big"], "unschedulable", ["NodeResourcesFit"]))
    queue = harness.queue.queue
    assert where(queue, big) is SubQueue.UNSCHEDULABLE
    request = first["w"]
    plugins = ["ExternalPermit"] if outcome == "unschedulable" else []
    await result(harness, request, outcome, plugins=plugins, forgotten=True)
    assert harness.queue.forgotten == 1
    assert where(queue, waiting) is itself
    assert where(queue, big) is not SubQueue.UNSCHEDULABLE


async def test_a_failed_result_that_held_no_room_moves_nothing(harness: Harness) -> None:
    big = make_pod("big", requests={"cpu": "2"})
    other = make_pod("o", requests={"cpu": "1"})
    await harness.apply(big, other)
    first = {r.name: r for r in harness.requests}
    await harness.answer(
        (first["big"], "unschedulable", ["NodeResourcesFit"]),
        (first["o"], "unschedulable", ["NodeResourcesFit"]),
    )
    assert where(harness.queue.queue, big) is SubQueue.UNSCHEDULABLE
    assert harness.queue.forgotten == 0


async def test_a_waiting_result_activates_the_pods_it_names(harness: Harness) -> None:
    a, b = member("a"), member("b")
    await harness.apply(a, b)
    first = {r.name: r for r in harness.requests}
    await harness.answer((first["b"], "unschedulable", ["Coscheduling"]))
    assert where(harness.queue.queue, b) is SubQueue.UNSCHEDULABLE
    request = first["a"]
    await result(harness, request, "waiting", activate=[b.metadata.uid or ""])
    assert "b" in harness.names()[2:]  # activated and dispatched again


# -- gang members early from backoffQ -------------------------------------------------


def test_a_gang_member_popped_early_from_backoff_goes_alone() -> None:
    queue, _ = make_queue()
    pods = [make_pod("solo"), member("m0"), member("m1")]
    for pod in pods:
        add(queue, pod)
    for info in queue.pop(10):
        queue.add_unschedulable_if_not_present(info.uid, ["NodeResourcesFit"])
    # Room freed while they still back off: all three to backoffQ.
    gone = make_pod("gone", requests={"cpu": "1"}, node_name="n1")
    assert queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, gone, None) == 3
    assert {where(queue, p) for p in pods} == {SubQueue.BACKOFF}
    batches = []
    while batch := queue.pop(10):
        batches.append(names(batch))
        for info in batch:
            queue.done(info.uid)
    assert sorted(map(sorted, batches)) == [["m0"], ["m1"], ["solo"]]
