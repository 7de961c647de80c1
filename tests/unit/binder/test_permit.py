"""Permit waits end to end on the embedded services (in-memory bus and store, FakeClock):
ExternalPermit's approvals and refusals from ``ksched.permit``, the announcement of each
waiting pod, timeouts with upstream's message, several plugins waiting on one pod with
their own timers (ExternalPermit and Coscheduling), gangs all or nothing, and waiting
pods that hold no dispatch credit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from services.common.bus import BusError, Message
from tests.builders import make_pod
from tests.unit.binder.permit_support import BIG_NODE, NODE, Run, config, group, member


@pytest.fixture
async def external() -> Any:
    run = Run(config(external=30))
    await run.start(
        BIG_NODE % 1,
        make_pod("free", requests={"cpu": "1"}),
        make_pod("a", requests={"cpu": "1"}, labels={"gate": "on"}),
        make_pod("b", requests={"cpu": "1"}, labels={"gate": "on"}),
    )
    yield run
    await run.stop()


async def test_selected_pods_wait_and_are_announced(external: Run) -> None:
    assert {d.pod: d.kind for d in external.decisions} == {"default/free": "Binding"}
    waiting = {w.name: w for w in external.waiting}
    assert sorted(waiting) == ["a", "b"]
    assert waiting["a"].node == "n1"
    (pending,) = waiting["a"].pending_plugins
    assert pending.name == "ExternalPermit"
    assert pending.deadline == "2023-11-14T22:13:50Z"  # START + 30 s
    assert set(external.cluster.queue.waiting) == {w.uid for w in external.waiting}
    assert external.cluster.queue.in_flight == 0


async def test_an_allow_binds_and_a_reject_fails_with_the_message(external: Run) -> None:
    await external.decide("allow", "a")
    await external.decide("reject", "b", message="quota exceeded")
    last = external.last()
    assert (last["default/a"].kind, last["default/a"].node) == ("Binding", "n1")
    assert last["default/b"].kind == "FailedScheduling"
    assert last["default/b"].message == "0/1 nodes are available: 1 quota exceeded."
    # b is back in the queue and waits again, with its next attempt.
    (again,) = (await external.cluster.store.waiting()).values()
    assert (again.name, again.attempt, again.state) == ("b", 2, "waiting")
    usage = await external.cluster.store.node_usage(["n1"])
    assert usage["n1"]["cpu"] == 3000  # free and a bound, b reserved once (attempt 2)


@pytest.mark.parametrize(
    ("verdict", "name", "extra", "field"),
    [
        ("allow", "free", {}, "name"),  # bound, not waiting
        ("allow", "nobody", {}, "name"),
        ("allow", "a", {"uid": "someone-else"}, "uid"),
        ("reject", "a", {"plugin": "Coscheduling"}, "plugin"),
    ],
)
async def test_a_decision_for_a_pod_not_waiting_there_is_an_error(
    external: Run, verdict: str, name: str, extra: dict[str, str], field: str
) -> None:
    plugin = extra.pop("plugin", "ExternalPermit")
    await external.decide(verdict, name, plugin=plugin, **extra)
    (report,) = external.errors
    assert (report.object_kind, report.name, report.field) == ("PermitDecision", name, field)
    assert len(await external.cluster.store.waiting()) == 2  # nothing changed


async def test_a_wait_times_out_with_upstream_s_message(external: Run) -> None:
    await external.advance(29)
    assert "default/a" not in external.last()
    await external.advance(2)
    last = external.last()
    assert last["default/a"].kind == "FailedScheduling"
    assert last["default/a"].message == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin "
        "ExternalPermit."
    )


async def test_two_plugins_wait_on_one_pod_each_with_its_timer() -> None:
    """Coscheduling (10 s) and ExternalPermit (30 s) on the same gang member: the gang
    completing allows Coscheduling's wait; the pod still waits for its approval."""
    run = Run(config(external=30, gang=10))
    await run.start(
        NODE % 1,
        group("g", 2, "2023-01-01T00:00:00Z"),
        member("m0", "g", gate="on"),
        member("m1", "g", gate="on"),
    )
    try:
        first = sorted([p.name for p in w.pending_plugins] for w in run.waiting)
        # The first member scheduled waits for both; the second completes the gang.
        assert first == [["Coscheduling", "ExternalPermit"], ["ExternalPermit"]]
        records = await run.cluster.store.waiting()
        assert sorted(sorted(r.pending) for r in records.values()) == [["ExternalPermit"]] * 2
        await run.advance(15)  # past Coscheduling's 10 s: it was allowed, nothing times out
        assert run.last() == {}
        await run.decide("allow", "m0")
        await run.decide("allow", "m1")
        assert {p: d.kind for p, d in run.last().items()} == {
            "default/m0": "Binding",
            "default/m1": "Binding",
        }
    finally:
        await run.stop()


async def test_a_gang_that_cannot_complete_times_out_at_coscheduling() -> None:
    run = Run(config(gang=10))
    await run.start(
        NODE % 1, group("g", 3, "2023-01-01T00:00:00Z"), member("m0", "g"), member("m1", "g")
    )
    try:
        # Only two of three members exist: PreFilter refuses them before any wait.
        assert {d.kind for d in run.last().values()} == {"FailedScheduling"}
        assert run.last()["default/m0"].message == (
            "0/1 nodes are available: pre-filter pod m0 cannot find enough sibling pods, "
            "current pods number: 2, minMember of group: 3. no new claims to deallocate,"
            " preemption: 0/1 nodes are "
            "available: 1 Preemption is not helpful for scheduling., PodGroup default/g gets "
            "rejected due to Pod m0 is unschedulable even after PostFilter"
        )
        assert run.waiting == []
    finally:
        await run.stop()


async def test_two_gangs_that_fit_alone_but_not_together_end_one_bound() -> None:
    run = Run(config(gang=10))
    await run.start(
        NODE % 1,
        NODE % 2,
        group("first", 3, "2023-01-01T00:00:00Z"),
        group("second", 3, "2023-01-01T00:00:01Z"),
        *[member(f"f{i}", "first") for i in range(3)],
        *[member(f"s{i}", "second") for i in range(3)],
    )
    try:
        await run.advance(60)
        kinds = {p: d.kind for p, d in run.last().items()}
        assert [p for p, k in sorted(kinds.items()) if k == "Binding"] == [
            "default/f0",
            "default/f1",
            "default/f2",
        ]
        assert all(k == "FailedScheduling" for p, k in kinds.items() if "/s" in p)
        assert await run.cluster.store.waiting() == {}
        usage = await run.cluster.store.node_usage(["n1", "n2"])
        assert sum(u.get("cpu", 0) for u in usage.values()) == 3000  # the second holds nothing
    finally:
        await run.stop()


async def test_waiting_pods_hold_no_dispatch_credit() -> None:
    run = Run(config(external=300), max_in_flight=4)
    waiting = [make_pod(f"w{i}", requests={"cpu": "10m"}, labels={"gate": "on"}) for i in range(20)]
    await run.start(
        BIG_NODE % 1, *waiting, *[make_pod(f"p{i}", requests={"cpu": "10m"}) for i in range(5)]
    )
    try:
        assert len(run.waiting) == 20
        bound = sorted(p for p, d in run.last().items() if d.kind == "Binding")
        assert bound == [f"default/p{i}" for i in range(5)]
    finally:
        await run.stop()


def _sample(run: Run, name: str, **labels: str) -> float:
    value = run.cluster.binder.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_permit_waits_and_binding_points_are_measured(external: Run) -> None:
    await external.advance(10)
    await external.decide("allow", "a")
    await external.advance(25)  # b times out at 30 s
    wait = "scheduler_permit_wait_duration_seconds"
    assert _sample(external, f"{wait}_count", result="Success") == 1
    assert _sample(external, f"{wait}_sum", result="Success") == pytest.approx(10)
    assert _sample(external, f"{wait}_count", result="Unschedulable") == 1
    assert _sample(external, f"{wait}_sum", result="Unschedulable") == pytest.approx(30)
    # One wait of 10 s: below the 16.384 s bucket, above 8.192 s.
    assert _sample(external, f"{wait}_bucket", result="Success", le="8.192") == 0
    assert _sample(external, f"{wait}_bucket", result="Success", le="16.384") == 1
    point = "scheduler_framework_extension_point_duration_seconds_count"
    profile = "default-scheduler"
    for extension_point in ("PreBind", "Bind", "PostBind"):  # free and a bound
        labels = {"extension_point": extension_point, "status": "Success", "profile": profile}
        assert _sample(external, point, **labels) == 2, extension_point
    unreserve = {"extension_point": "Unreserve", "status": "Success", "profile": profile}
    assert _sample(external, point, **unreserve) == 1  # b's timeout


async def test_a_wait_taken_by_a_batch_whose_publish_failed_is_bound_on_redelivery(
    external: Run,
) -> None:
    bus = external.cluster.bus
    publish = bus.publish
    failures: list[str] = []

    async def once_refused(messages: Sequence[Message]) -> None:
        if not failures and any(m.routing_key.startswith("binding.") for m in messages):
            failures.append("refused")
            raise BusError("the broker went away")
        await publish(messages)

    bus.publish = once_refused  # type: ignore[method-assign]
    await external.decide("allow", "a")
    await external.advance(1)
    assert failures == ["refused"]
    bound = [d for d in external.decisions if d.kind == "Binding" and d.pod == "default/a"]
    assert [(d.kind, d.node) for d in bound] == [("Binding", "n1")]
    assert await external.cluster.store.waiting() != {}  # b still waits, a is gone
    assert "a" not in {r.name for r in (await external.cluster.store.waiting()).values()}
