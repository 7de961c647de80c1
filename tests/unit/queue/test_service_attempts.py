"""QueueService with attempts that outlive one scheduling cycle: pods waiting at
Permit (no credit, adopted after a restart), gangs dispatched one batch at a time,
preemptors held until their victims go, and results that arrive after the pod left."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts import topology
from contracts.k8s import POD_GROUP_LABEL
from contracts.messages import AttemptResult, ResultBatch, ScheduleRequest
from services.common.bus import Message
from services.common.store import WaitingRecord
from tests.builders import make_node, make_pod
from tests.unit.queue.helpers import with_
from tests.unit.queue.service_support import Harness


async def preempted(harness: Harness, request: ScheduleRequest, victims: list[Any]) -> None:
    """The scheduler reports that ``request``'s pod preempted ``victims`` on n1."""
    result = AttemptResult(
        uid=request.uid,
        namespace="default",
        name=request.name,
        attempt=request.attempt,
        outcome="unschedulable",
        plugins=["NodeResourcesFit"],
        nominated_node="n1",
        victims=[v.metadata.uid for v in victims],
    )
    body = msgspec.json.encode(ResultBatch(results=[result]))
    await harness.bus.publish([Message(topology.RESULTS.name, topology.RESULTS_KEY, body)])
    await harness.settle()


async def test_pods_waiting_at_permit_use_no_credit_and_end_with_their_final_result(
    harness: Harness,
) -> None:
    await harness.apply(*[make_pod(f"p{i}") for i in range(6)])
    first = list(harness.requests)
    assert len(first) == 4 and harness.queue.in_flight == 4
    await harness.answer(*[(r, "waiting", []) for r in first])
    # Four pods wait: they keep their lease and stay in flight, but free their credit.
    assert harness.names()[4:] == ["p4", "p5"]
    assert harness.queue.in_flight == 2
    assert set(harness.queue.waiting) == {r.uid for r in first}
    assert {r.uid for r in first} <= set(await harness.store.leases())
    # A repeated "waiting" changes nothing; the final result ends the attempt.
    await harness.answer((first[0], "waiting", []), (first[1], "bound", []))
    assert first[1].uid not in harness.queue.queue
    assert first[1].uid not in harness.queue.waiting
    await harness.answer((first[2], "unschedulable", ["Coscheduling"]))
    assert first[2].uid not in harness.queue.waiting
    assert harness.queue.queue.in_flight_attempt(first[2].uid) is None
    assert harness.queue.in_flight == 2


async def test_a_deleted_waiting_pod_stops_counting_as_waiting(harness: Harness) -> None:
    pod = make_pod("w")
    await harness.apply(pod)
    (request,) = harness.requests
    await harness.answer((request, "waiting", []))
    assert harness.queue.in_flight == 0
    await harness.apply(pod, type_="DELETED")
    assert harness.queue.in_flight == 0
    assert harness.queue.waiting == {}


def _member(name: str, group: str) -> Any:
    return with_(make_pod(name), metadata__labels={POD_GROUP_LABEL: group})


async def test_gangs_go_out_one_at_a_time_until_each_reported(harness: Harness) -> None:
    await harness.apply(
        _member("g1-a", "g1"),
        _member("g1-b", "g1"),
        _member("g2-a", "g2"),
        _member("g2-b", "g2"),
        make_pod("solo"),
    )
    # Credit for four, but g2 waits for g1's results, and so does solo behind it.
    assert harness.names() == ["g1-a", "g1-b"]
    g1a, g1b = harness.requests
    await harness.answer((g1a, "waiting", []))
    assert harness.names() == ["g1-a", "g1-b"]  # g1-b has not reported yet
    await harness.answer((g1b, "error", []))
    # A waiting member has reported: g2 goes out, solo (no group) right behind it.
    assert harness.names() == ["g1-a", "g1-b", "g2-a", "g2-b", "solo"]
    g2a, g2b = harness.requests[2:4]
    await harness.answer((g2a, "waiting", []), (g2b, "waiting", []))
    await harness.advance(2)  # g1-b's backoff is over; g2 has reported: g1 may go out
    assert harness.names()[5:] == ["g1-b"]
    assert harness.requests[5].attempt == 2


async def test_gangs_in_one_batch_go_to_one_replica_together() -> None:
    harness = Harness(max_in_flight=8, dispatch_batch=4)
    await harness.start()
    await harness.apply(*[_member(f"{g}-{m}", g) for g in ("g1", "g2", "g3") for m in ("a", "b")])
    # g1 and g2 fill one batch (one replica schedules them in order); g3 waits for them.
    assert harness.names() == ["g1-a", "g1-b", "g2-a", "g2-b"]
    await harness.answer(*[(r, "waiting", []) for r in harness.requests[:3]])
    assert len(harness.requests) == 4
    await harness.answer((harness.requests[3], "bound", []))
    assert harness.names()[4:] == ["g3-a", "g3-b"]
    await harness.queue.stop()
    await harness.bus.close()


async def test_a_gang_member_that_leaves_the_queue_no_longer_holds_the_others() -> None:
    harness = Harness(dispatch_batch=1)
    await harness.start()
    first = _member("g1-a", "g1")
    await harness.apply(first, _member("g2-a", "g2"))
    assert harness.names() == ["g1-a"]
    await harness.apply(first, type_="DELETED")  # no result will ever come
    assert harness.names() == ["g1-a", "g2-a"]
    await harness.queue.stop()
    await harness.bus.close()


async def test_a_restarted_queue_leaves_pods_waiting_at_permit_waiting() -> None:
    first = Harness(max_in_flight=4, dispatch_batch=4)
    await first.start()
    await first.apply(make_pod("w"), make_pod("x"))
    w, _ = first.requests
    await first.answer((w, "waiting", []))
    # The scheduler recorded w's wait (attempt 1) in the store; x's result never came.
    waiting = WaitingRecord(
        uid=w.uid,
        namespace="default",
        name="w",
        node="n1",
        attempt=w.attempt,
        profile=w.profile,
        pending={"ExternalPermit": first.clock.now() + 60},
        waits={"ExternalPermit": 60.0},
        request=b"{}",
    )
    await first.store.put_waiting([waiting])
    await first.queue.stop()
    restarted = first.new_service()
    await restarted.start()
    await first.settle()
    # x is attempted again; w keeps waiting with its attempt, using no credit.
    assert [(r.name, r.attempt) for r in first.requests[2:]] == [("x", 2)]
    assert restarted.waiting == {w.uid: 1}
    assert restarted.queue.in_flight_attempt(w.uid) == 1
    assert restarted.in_flight == 1
    # Its final result ends it as usual.
    await first.answer((w, "bound", []))
    assert w.uid not in restarted.queue
    await restarted.stop()
    await first.bus.close()


async def test_a_preemptor_waits_for_its_victims_to_go(harness: Harness) -> None:
    victims = [make_pod(f"v{i}", node_name="n1", priority=0) for i in range(2)]
    await harness.apply(make_node("n1"), *victims)
    preemptor = make_pod("p", priority=100)
    await harness.apply(preemptor)
    (request,) = harness.requests
    await preempted(harness, request, victims)
    assert (await harness.store.nominations())[request.uid].node == "n1"
    # The first victim's deletion would move it (NodeResourcesFit), but one is left.
    await harness.apply(victims[0], type_="DELETED")
    await harness.advance(20)
    assert harness.names() == ["p"]
    assert harness.queue.preempting.running(request.uid, harness.clock.now())
    await harness.apply(victims[1], type_="DELETED")
    await harness.advance(20)
    assert harness.names() == ["p", "p"]
    assert not harness.queue.preempting.running(request.uid, harness.clock.now())


async def test_victims_that_never_go_let_the_preemptor_try_again(harness: Harness) -> None:
    victim = make_pod("v", node_name="n1", priority=0)
    await harness.apply(make_node("n1"), victim)
    await harness.apply(make_pod("p", priority=100))
    (request,) = harness.requests
    await preempted(harness, request, [victim])
    await harness.advance(299)
    assert harness.names() == ["p"]
    await harness.advance(60)  # past the patience, the leftover flush retries it
    assert harness.names() == ["p", "p"]


async def test_a_victim_deleted_before_the_result_arrives_does_not_hold_the_preemptor(
    harness: Harness,
) -> None:
    victim = make_pod("v", node_name="n1", priority=0)
    await harness.apply(make_node("n1"), victim)
    await harness.apply(make_pod("p", priority=100))
    (request,) = harness.requests
    await harness.apply(victim, type_="DELETED")  # the client was quick
    await preempted(harness, request, [victim])
    assert not harness.queue.preempting.running(request.uid, harness.clock.now())
    await harness.advance(20)  # the deletion during the attempt moves it after backoff
    assert harness.names() == ["p", "p"]


async def test_a_gangs_later_members_wait_for_its_first_ones_to_report(harness: Harness) -> None:
    await harness.apply(_member("g1-a", "g1"), _member("g1-b", "g1"))
    assert harness.names() == ["g1-a", "g1-b"]
    await harness.apply(_member("g1-c", "g1"))  # arrives while a and b are in flight
    assert harness.names() == ["g1-a", "g1-b"]
    a, b = harness.requests
    await harness.answer((a, "waiting", []), (b, "waiting", []))  # recorded at Permit
    assert harness.names() == ["g1-a", "g1-b", "g1-c"]


async def test_a_pod_bound_before_its_result_arrives_leaves_no_lease(harness: Harness) -> None:
    pod = make_pod("p")
    await harness.apply(make_node("n1"), pod)
    (request,) = harness.requests
    assert await harness.store.leases() == {request.uid: request.attempt}
    # The informer recorded the Binding before the binder's result reached the queue,
    # and a reload after a store loss wrote the attempt's lease back meanwhile.
    await harness.apply(with_(pod, spec__node_name="n1"), type_="MODIFIED")
    await harness.store.set_leases({request.uid: request.attempt})
    await harness.answer((request, "bound", []))  # now too late: ignored
    await harness.advance(1)  # the next tick drops the lease of the attempt that ended
    assert await harness.store.leases() == {}


async def test_a_queue_restarted_mid_preemption_remembers_it() -> None:
    """The preemption in flight is in the store: the restarted queue (a standby taking
    over alike) neither retries the preemptor nor lets it preempt again while its
    victims are there, and lets it go once they are."""
    first = Harness()
    await first.start()
    victims = [make_pod(f"v{i}", node_name="n1", priority=0) for i in range(2)]
    await first.apply(make_node("n1"), *victims)
    await first.apply(make_pod("p", priority=100))
    (request,) = first.requests
    await preempted(first, request, victims)
    await first.apply(victims[0], type_="DELETED")
    stored = await first.store.preemptions()
    assert stored[request.uid].victims == (victims[1].metadata.uid,)
    await first.queue.stop()

    restarted = first.new_service()
    await restarted.start()
    await first.settle()
    now = first.clock.now()
    assert restarted.preempting.running(request.uid, now)
    await first.advance(60)  # backoff and the leftover flush pass: it is held back
    assert first.names() == ["p"]
    await first.apply(victims[1], type_="DELETED")
    await first.advance(20)
    assert first.names() == ["p", "p"]
    assert await first.store.preemptions() == {}
    await restarted.stop()
    await first.bus.close()


async def test_victims_gone_while_the_queue_was_down_end_the_preemption() -> None:
    first = Harness()
    await first.start()
    victim = make_pod("v", node_name="n1", priority=0)
    await first.apply(make_node("n1"), victim)
    await first.apply(make_pod("p", priority=100))
    (request,) = first.requests
    await preempted(first, request, [victim])
    await first.queue.stop()
    await first.apply(victim, type_="DELETED", publish=False)  # while the queue is down

    restarted = first.new_service()
    await restarted.start()
    await first.settle()
    assert not restarted.preempting.running(request.uid, first.clock.now())
    assert await first.store.preemptions() == {}
    await first.advance(20)
    assert first.names() == ["p", "p"]
    await restarted.stop()
    await first.bus.close()
