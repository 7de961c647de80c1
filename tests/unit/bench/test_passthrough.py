"""``ksched bench Passthrough`` and the open-loop ``--rate``: the trivial service's
answers, the publish schedule at a fixed rate (on a fake clock), the flags' errors."""

from __future__ import annotations

import json

import msgspec
import pytest

from bench.config import workload_named
from bench.embedded import Timings
from bench.passthrough import NODE, answers
from contracts import topology
from contracts.k8s import Binding
from services.cli.main import main
from services.cli.manifests import Document
from services.common.bus import Delivery


def delivery(event: object) -> Delivery:
    body = event if isinstance(event, bytes) else json.dumps(event).encode()
    return Delivery(body, topology.EVENTS.name, "pod.added", {}, False)


def pod_event(name: str, *, node: str | None = None, type_: str = "ADDED") -> dict[str, object]:
    spec: dict[str, object] = {"containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": "ns", "uid": f"u-{name}"}
    return {"type": type_, "object": {"kind": "Pod", "metadata": meta, "spec": spec}}


def test_each_pending_pod_gets_a_binding_to_the_fixed_node() -> None:
    out = answers(
        [
            delivery(pod_event("a")),
            delivery(pod_event("bound", node="n1")),
            delivery(pod_event("gone", type_="DELETED")),
            delivery(b"not json"),
            delivery(pod_event("b")),
        ]
    )
    assert [m.routing_key for m in out] == ["binding.ns", "binding.ns"]
    bindings = [msgspec.json.decode(m.body, type=Binding) for m in out]
    assert [(b.metadata.name, b.metadata.uid, b.target.name) for b in bindings] == [
        ("a", "u-a", NODE),
        ("b", "u-b", NODE),
    ]
    assert {m.exchange for m in out} == {topology.DECISIONS.name}


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_open_loop_publishes_each_pod_when_it_is_due() -> None:
    """At 100 pods/s, pod i is due i/100 s after the start, whatever the answers."""
    time = FakeTime()
    batches: list[tuple[float, int]] = []

    async def publish(documents: list[Document]) -> None:
        batches.append((time.now, len(documents)))
        time.now += 0.001  # the publish itself takes a millisecond

    timings = Timings(5)
    workload = workload_named("SchedulingBasic")
    started = await timings.publish(
        publish, workload, 5, rate=100.0, clock=time.clock, sleep=time.sleep
    )
    assert started == 1000.0
    assert [n for _, n in batches] == [1, 1, 1, 1, 1]
    assert [round(at - 1000.0, 3) for at, _ in batches] == [0.0, 0.01, 0.02, 0.03, 0.04]
    assert len(timings.published) == 5


async def test_without_a_rate_every_pod_goes_at_once() -> None:
    time = FakeTime()
    sizes: list[int] = []

    async def publish(documents: list[Document]) -> None:
        sizes.append(len(documents))

    timings = Timings(1200)
    await timings.publish(
        publish, workload_named("SchedulingBasic"), 1200, clock=time.clock, sleep=time.sleep
    )
    assert sizes == [500, 500, 200] and time.slept == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "SchedulingBasic", "--rate", "0", "--mode", "services"],
         "--rate: 0 pods per second: must be more than 0"),
        (["bench", "SchedulingBasic", "--rate", "5", "--mode", "embedded"],
         "--rate: only with --mode services (or the Passthrough workload)"),
    ],
)  # fmt: skip
def test_a_wrong_rate_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"ksched bench: {message}"]
