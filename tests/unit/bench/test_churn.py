"""``ksched bench Unschedulable`` and ``SchedulingWithMixedChurn`` (upstream's churn op,
create and recreate modes, at a small scale, no timing) and ``ksched bench QueueOps``."""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from collections.abc import Sequence

import msgspec
import pytest

from bench.churn import ChurnOp
from bench.config import load_workloads
from bench.embedded import bench_embedded
from bench.services import bench_services
from services.cli.main import main
from services.cli.manifests import Document
from services.common.settings import from_env
from tests.integration.harness import AMQP_URL, REDIS_URL

WORKLOADS = load_workloads()

UNSCHEDULABLE = WORKLOADS["Unschedulable"]


def test_the_workload_follows_upstream() -> None:
    assert UNSCHEDULABLE.counts(5000) == (100, 10000)
    assert UNSCHEDULABLE.counts(50) == (1, 100)
    churn = UNSCHEDULABLE.churn
    assert churn is not None
    assert (churn.namespace, churn.interval, churn.mode, churn.number) == (
        "namespace-2",
        0.2,
        "create",
        0,
    )
    pod = churn.object(0, 4)
    assert pod["metadata"]["name"] == "pod-h-4"
    assert pod["spec"]["priority"] == 10
    (container,) = pod["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": "9", "memory": "500Mi"}}
    measured = UNSCHEDULABLE.measured(0)
    assert measured["metadata"]["namespace"] == "namespace-3"
    assert "priority" not in measured["spec"]


async def test_churn_publishes_one_pod_at_start_and_stops() -> None:
    published: list[Document] = []

    async def publish(documents: Sequence[Document]) -> None:
        published.extend(documents)

    assert UNSCHEDULABLE.churn is not None
    churn = ChurnOp(UNSCHEDULABLE.churn, publish)
    await churn.start()
    assert await churn.stop() == 1
    (document,) = published
    event = msgspec.json.decode(document.body)
    assert (document.routing_key, event["type"]) == ("pod.added", "ADDED")
    assert event["object"]["metadata"]["namespace"] == "namespace-2"


async def test_embedded_mode_binds_every_measured_pod_under_churn() -> None:
    report = await bench_embedded(UNSCHEDULABLE, 20, 2, 30)
    assert (report["workload"], report["mode"], report["pods"]) == ("Unschedulable", "embedded", 30)
    assert report["unschedulable_churn"] >= 1
    assert report["churn_events"] == report["unschedulable_churn"]  # create: no deletes


MIXED = WORKLOADS["SchedulingWithMixedChurn"]


def events(documents: Sequence[Document]) -> list[tuple[str, str]]:
    """(routing key, name) of each watch event."""
    return [
        (d.routing_key, msgspec.json.decode(d.body)["object"]["metadata"]["name"])
        for d in documents
    ]


def test_mixed_churn_follows_upstream() -> None:
    assert MIXED.counts(5000) == (0, 10000)
    churn = MIXED.churn
    assert churn is not None
    assert (churn.mode, churn.number, churn.interval) == ("recreate", 1, 1.0)
    assert [t.kind for t in churn.templates] == ["node", "pod", "service"]
    node, pod, service = (churn.object(j, 0) for j in range(3))
    assert "namespace" not in node["metadata"] and node["metadata"]["uid"] == "bench-node-churn-0"
    assert node["status"]["allocatable"]["pods"] == "0"
    assert (pod["metadata"]["namespace"], pod["spec"]["priority"]) == ("namespace-1", 10)
    assert service["metadata"]["namespace"] == "namespace-1"
    assert service["spec"]["selector"] == {"app": "foo"}


async def ignore(documents: Sequence[Document]) -> None:
    pass


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param(
            [1],
            [[("node.added", "node-churn-0"), ("pod.added", "pod-h-0"),
              ("service.added", "service-churn-0")]],
            id="first-step-creates-one-of-each",
        ),
        pytest.param(
            [1, 1, 1],
            [
                [("node.added", "node-churn-0"), ("pod.added", "pod-h-0"),
                 ("service.added", "service-churn-0")],
                [("node.deleted", "node-churn-0"), ("pod.deleted", "pod-h-0"),
                 ("service.deleted", "service-churn-0")],
                [("node.added", "node-churn-1"), ("pod.added", "pod-h-1"),
                 ("service.added", "service-churn-1")],
            ],
            id="recreate-deletes-then-creates-anew",
        ),
        pytest.param(
            [2],
            [[("node.added", "node-churn-0"), ("pod.added", "pod-h-0"),
              ("service.added", "service-churn-0"), ("node.deleted", "node-churn-0"),
              ("pod.deleted", "pod-h-0"), ("service.deleted", "service-churn-0")]],
            id="late-tick-takes-every-step-due",
        ),
    ],
)  # fmt: skip
def test_recreate_mode_steps(steps: list[int], expected: list[list[tuple[str, str]]]) -> None:
    assert MIXED.churn is not None
    op = ChurnOp(MIXED.churn, ignore)
    assert [events(op.step(n)) for n in steps] == expected
    created = sum(1 for batch in expected for key, _ in batch if key.endswith(".added"))
    assert (op.published, op.events) == (created, sum(map(len, expected)))


@pytest.mark.parametrize(
    ("number", "steps", "created"),
    [(0, 5, 5), (2, 5, 2), (3, 1, 1)],
)
def test_create_mode_stops_after_number_steps(number: int, steps: int, created: int) -> None:
    assert UNSCHEDULABLE.churn is not None
    churn = dataclasses.replace(UNSCHEDULABLE.churn, number=number)
    op = ChurnOp(churn, ignore)
    names = [name for _, name in events(op.step(steps))]
    assert names == [f"pod-h-{i}" for i in range(created)]
    assert op.finished == (0 < number <= steps)


async def test_embedded_mode_binds_every_measured_pod_under_mixed_churn() -> None:
    report = await bench_embedded(MIXED, 20, 0, 30)
    assert (report["workload"], report["nodes"], report["pods"]) == (MIXED.name, 20, 30)
    assert report["churn_events"] >= 3 and report["unschedulable_churn"] >= 3


def test_cycle_mode_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "Unschedulable", "--nodes", "10", "--mode", "cycle"]) == 2
    assert "use --mode embedded or --mode services" in capsys.readouterr().err


@pytest.mark.integration
async def test_services_mode_binds_every_measured_pod_under_churn() -> None:
    settings = from_env(amqp_url=AMQP_URL, redis_url=REDIS_URL)
    report = await bench_services(UNSCHEDULABLE, 20, 2, 30, settings)
    assert (report["mode"], report["pods"]) == ("services", 30)
    assert report["unschedulable_churn"] >= 1
    json.dumps(report)


def test_queue_ops_prints_what_the_queue_bench_returns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def queue_ops(pods: int = 100_000) -> dict[str, float]:
        calls.append(pods)
        return {"add": 1.5, "pop": 2.0}

    fake = types.ModuleType("bench.queue_ops")
    fake.queue_ops = queue_ops
    monkeypatch.setitem(sys.modules, "bench.queue_ops", fake)
    assert main(["bench", "QueueOps", "--pods", "500"]) == 0
    assert main(["bench", "QueueOps"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [{"add": 1.5, "pop": 2.0}] * 2
    assert calls == [500, 100_000]
