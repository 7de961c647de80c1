"""Preemption through the services (embedded: in-memory bus and store, FakeClock): the
decisions a client receives (the Preemption with each victim's DisruptionTarget
condition, the nominations, the Preempted Events), the nominations in the store, the
victims' removal, and the preemptor bound on its nominated node afterwards."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from contracts import topology
from contracts.k8s import Event, Pod
from contracts.preemption import Preemption
from services.cli.embedded import DecisionRecord, EmbeddedCluster
from services.cli.simulate import load_cluster, print_table, simulate
from services.common.bus import Delivery
from services.common.clock import FakeClock
from tests.builders import make_pod, manifest

NODE = "kind: Node\nmetadata: {name: %s}\nstatus: {allocatable: {cpu: '4', pods: '110'}}\n"
HIGH = (
    "kind: PriorityClass\napiVersion: scheduling.k8s.io/v1\nmetadata: {name: high}\nvalue: 1000\n"
)


async def run(text: str) -> list[dict[str, object]]:
    records = await simulate(load_cluster(text, "test.yaml"), seed=0)
    return [r.to_json() for r in records]


async def test_a_high_priority_pod_preempts_and_binds_on_its_nominated_node() -> None:
    text = manifest(
        NODE % "n1",
        NODE % "n2",
        HIGH,
        make_pod("a", "demo", requests={"cpu": "3"}, node_name="n1", priority=10),
        make_pod("b", "demo", requests={"cpu": "2"}, node_name="n2", priority=5),
        make_pod("c", "demo", requests={"cpu": "2"}, node_name="n2", priority=0),
        make_pod("urgent", "demo", requests={"cpu": "3"}, priority_class_name="high"),
    )
    lines = await run(text)
    assert lines == [
        {
            "kind": "FailedScheduling",
            "pod": "demo/urgent",
            "message": "0/2 nodes are available: 2 Insufficient cpu.",
            "attempts": 1,
        },
        # n2's highest victim (5) is below n1's (10), though both of n2's pods must go.
        {
            "kind": "Preemption",
            "pod": "demo/urgent",
            "nominatedNode": "n2",
            "victims": ["demo/b", "demo/c"],
            "attempts": 1,
        },
        {"kind": "Binding", "pod": "demo/urgent", "node": "n2", "attempts": 2},
    ]


async def test_no_victims_and_not_helpful_are_upstreams_words() -> None:
    text = manifest(
        NODE % "n1",
        make_pod("a", "demo", requests={"cpu": "4"}, node_name="n1", priority=10),
        make_pod("equal", "demo", requests={"cpu": "1"}, priority=10),
        make_pod("never", "demo", requests={"cpu": "1"}, priority=100, preemption_policy="Never"),
        make_pod(
            "nowhere", "demo", requests={"cpu": "1"}, priority=100, node_selector={"disk": "ssd"}
        ),
    )
    lines = {line["pod"]: line for line in await run(text)}
    assert lines["demo/equal"]["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate,"
        " preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )
    assert lines["demo/never"]["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate,"
        " preemption: not eligible due to "
        "preemptionPolicy=Never."
    )
    assert lines["demo/nowhere"]["message"] == (
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


class Decisions:
    """Every message on ``ksched.decisions``, by routing key word."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bytes, dict[str, str]]] = []

    async def __call__(self, deliveries: Sequence[Delivery]) -> None:
        self.seen += [(d.routing_key, d.body, dict(d.headers)) for d in deliveries]

    def of(self, word: str) -> list[bytes]:
        return [body for key, body, _ in self.seen if key.startswith(f"{word}.")]


@pytest.fixture
async def preempting() -> Any:
    records: list[DecisionRecord] = []
    embedded = EmbeddedCluster(clock=FakeClock(), seed=0, on_decision=records.append)
    decisions = Decisions()
    await embedded.start()
    watch = topology.QueueSpec(
        "test.decisions",
        (topology.QueueBinding(topology.DECISIONS.name, "#"),),
        durable=False,
        auto_delete=True,
        dead_letter=False,
    )
    await embedded.bus.consume_raw(watch, decisions)
    lower = make_pod("lower", "demo", requests={"cpu": "1"}, priority=50)
    text = manifest(
        NODE % "n1",
        make_pod("victim", "demo", requests={"cpu": "4"}, node_name="n1", priority=0),
        lower,
    )
    await embedded.publish(load_cluster(text, "test.yaml"))
    embedded.release()
    await embedded.settle()
    yield embedded, decisions, records
    await embedded.stop()


async def test_what_a_client_receives(preempting: Any) -> None:
    embedded, decisions, _records = preempting
    # lower (priority 50) preempts victim (0) on n1, the only node.
    (first,) = [msgspec.json.decode(b, type=Preemption) for b in decisions.of("preemption")]
    assert (first.preemptor.name, first.nominated_node) == ("lower", "n1")
    assert [v.name for v in first.victims] == ["victim"]
    condition = first.victims[0].condition
    assert (condition.type, condition.status, condition.reason) == (
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
    )
    assert condition.message == "default-scheduler: preempting to accommodate a higher priority pod"
    (nomination,) = [msgspec.json.decode(b, type=Pod) for b in decisions.of("nomination")]
    assert (nomination.metadata.name, nomination.status.nominated_node_name) == ("lower", "n1")
    events = [msgspec.json.decode(b, type=Event) for b in decisions.of("event")]
    (preempted,) = [e for e in events if e.reason == "Preempted"]
    assert preempted.involved_object.name == "victim"
    assert preempted.type == "Normal" and preempted.action == "Preempting"
    assert preempted.message == f"Preempted by pod {first.preemptor.uid} on node n1"
    # The victim was deleted (as a client would), and lower bound on n1.
    bindings = [b for b in decisions.of("binding")]
    assert len(bindings) == 1 and b'"n1"' in bindings[0]
    assert await embedded.store.nominations() == {}


async def test_a_nomination_is_in_the_store_until_the_pod_binds() -> None:
    embedded = EmbeddedCluster(clock=FakeClock(), seed=0)
    await embedded.start()
    # A victim nobody deletes: the preemptor stays nominated.
    text = manifest(
        NODE % "n1",
        make_pod("victim", "demo", requests={"cpu": "4"}, node_name="n1", priority=0),
        make_pod("p", "demo", requests={"cpu": "1"}, priority=9),
    )
    documents = load_cluster(text, "test.yaml")
    embedded._delete = _keep  # type: ignore[method-assign]
    await embedded.publish(documents)
    embedded.release()
    await embedded.settle()
    nominations = await embedded.store.nominations()
    assert [(n.node, n.priority) for n in nominations.values()] == [("n1", 9)]
    await embedded.stop()


async def _keep(_: Sequence[str]) -> None:
    return None


async def test_preemption_metrics_have_upstreams_names_and_buckets(preempting: Any) -> None:
    embedded, _decisions, _records = preempting
    registry = embedded.scheduler.metrics.registry
    assert registry.get_sample_value("scheduler_preemption_attempts_total") == 1
    assert registry.get_sample_value("scheduler_preemption_victims_count") == 1
    assert registry.get_sample_value("scheduler_preemption_victims_sum") == 1
    assert registry.get_sample_value("scheduler_preemption_victims_bucket", {"le": "1.0"}) == 1
    assert registry.get_sample_value("scheduler_preemption_victims_bucket", {"le": "64.0"}) == 1


async def test_the_table_lists_each_preemption_apart() -> None:
    text = manifest(
        NODE % "n1",
        make_pod("low-a", "demo", requests={"cpu": "2"}, node_name="n1", priority=0),
        make_pod("low-b", "demo", requests={"cpu": "2"}, node_name="n1", priority=0),
        make_pod("urgent", "demo", requests={"cpu": "3"}, priority=1000),
    )
    records = await simulate(load_cluster(text, "test.yaml"), seed=0)
    out = io.StringIO()
    print_table(records, out)
    assert out.getvalue().splitlines() == [
        "DECISION  POD          NODE / MESSAGE  ATTEMPTS",
        "Binding   demo/urgent  n1              2",
        "",
        "preemption: demo/urgent nominated to n1, victims demo/low-a, demo/low-b (attempt 1)",
        "",
        "1 bound, 0 failed scheduling",
    ]


async def test_explain_shows_the_preempting_attempts_candidates() -> None:
    text = manifest(
        NODE % "n1",
        NODE % "n2",
        make_pod("a", "demo", requests={"cpu": "3"}, node_name="n1", priority=10),
        make_pod("b", "demo", requests={"cpu": "3"}, node_name="n2", priority=5),
        make_pod("urgent", "demo", requests={"cpu": "3"}, priority=1000),
    )
    records = await simulate(load_cluster(text, "test.yaml"), seed=0, explain=True)
    out = io.StringIO()
    print_table(records, out)
    lines = out.getvalue().splitlines()
    first = lines.index(
        "== FailedScheduling demo/urgent: 0/2 nodes are available: 2 Insufficient cpu. (attempt 1)"
    )
    at = lines.index("Preemption: nominated n2 (lowest highest-priority victim)")
    assert first < at < lines.index("== Binding demo/urgent → n2 (attempt 2)")
    assert lines[at + 1 : at + 4] == [
        "CANDIDATE  VICTIMS      PDB VIOLATIONS",
        "n2 *       demo/b (5)   0",
        "n1         demo/a (10)  0",
    ]
