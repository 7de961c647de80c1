"""``ksched bench --mode embedded``: the whole pipeline in this process on the in-memory
edges; latency is from the publish of a measured pod's watch event to its decision.

Also what the embedded and services modes share: the watch-event documents of a
workload and :class:`Timings` of the measured pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import msgspec

from bench.churn import ChurnOp
from bench.cpu import figures as cpu_figures
from bench.report import summary
from bench.steady import SteadyState
from bench.workload import Workload
from contracts import topology
from services.cli.embedded import DecisionRecord, EmbeddedCluster
from services.cli.manifests import Document
from services.common import features
from services.common.clock import SystemClock
from services.framework.config import load_config

Publish = Callable[[Sequence[Document]], Awaitable[None]]


def document(index: int, kind: str, obj: dict[str, Any]) -> Document:
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Document(index, kind, body, topology.event_key(kind, "ADDED"))


def setup_documents(workload: Workload, nodes: int, init: int, pods: int) -> list[Document]:
    """The nodes (the fixed-count ops' ones first), the DRA objects, then the init pods
    bound to them, then the PodGroups the ``pods`` measured pods join (with gangs)."""
    docs = [document(i, "node", node) for i, node in enumerate(workload.all_nodes(nodes))]
    objects, init_pods = workload.setup(nodes, init, pods)
    docs += [document(i, kind, obj) for i, (kind, obj) in enumerate(objects)]
    docs += [document(i, "pod", pod) for i, pod in enumerate(init_pods)]
    kind = workload.gangs.kind if workload.gangs is not None else "podgroup"
    return docs + [document(i, kind, g) for i, g in enumerate(workload.groups(pods))]


class Timings:
    """Publish and decision times of the measured pods (wall clock, seconds)."""

    def __init__(self, pods: int) -> None:
        self.expected = pods
        self.published: dict[str, float] = {}
        self.decided: dict[str, float] = {}
        self.done = asyncio.Event()
        self.steady: SteadyState | None = None
        """A steady-state measurement: it replaces each bound pod; only the pods bound
        within its window count."""

    def decision(self, pod: str, at: float) -> None:
        if pod in self.published and pod not in self.decided:
            steady = self.steady
            if steady is not None:
                if at < steady.until:
                    self.decided[pod] = at
                    steady.bound(pod, at)
                return
            self.decided[pod] = at
            if len(self.decided) >= self.expected:
                self.done.set()

    def latencies_ms(self) -> list[float]:
        return [(at - self.published[pod]) * 1000 for pod, at in self.decided.items()]

    async def publish(
        self,
        publish: Publish,
        workload: Workload,
        pods: int,
        rate: float | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> float:
        """Publish the measured pods as fast as possible, or (``rate``) open-loop: pod
        ``i`` is due ``i / rate`` seconds after the start, whatever the decisions do;
        each publish takes the pods due by then. Returns when it started."""
        started = clock()
        if rate is None:
            for start in range(0, pods, 500):
                chunk = range(start, min(start + 500, pods))
                now = time.time()
                for i in chunk:
                    self.published[workload.measured_key(i)] = now
                await publish([document(i, "pod", workload.measured(i)) for i in chunk])
            return started
        sent = 0
        while sent < pods:
            now = clock()
            # (the epsilon: 0.01 s * 100/s must count as 1 pod, not 0.99999…)
            due = min(pods, int((now - started) * rate + 1e-6) + 1)
            if due > sent:
                for i in range(sent, due):
                    self.published[workload.measured_key(i)] = now
                await publish([document(i, "pod", workload.measured(i)) for i in range(sent, due)])
                sent = due
            if sent < pods:
                await sleep(max(0.0, started + sent / rate - clock()))
        return started


async def bench_embedded(workload: Workload, nodes: int, init: int, pods: int) -> dict[str, object]:
    with feature_gates(workload.feature_gates):
        return await _bench_embedded(workload, nodes, init, pods)


@contextlib.contextmanager
def feature_gates(text: str) -> Iterator[None]:
    """The test case's feature gates installed for the run (in this process)."""
    before = features.current()
    features.install(features.parse(text))
    try:
        yield
    finally:
        features.install(before)


async def _bench_embedded(
    workload: Workload, nodes: int, init: int, pods: int
) -> dict[str, object]:
    timings = Timings(pods)
    timed_to_binding = workload.timed_to_binding

    def seen(record: DecisionRecord) -> None:
        # A gang member tried before its group is complete fails first (PreFilter), a
        # preemptor fails before it binds: for those only the Binding is the decision.
        if not timed_to_binding or record.kind == "Binding":
            timings.decision(record.pod, time.time())

    profiles = None
    if workload.scheduler_config is not None:
        profiles = load_config(workload.scheduler_config).profiles
    cluster = EmbeddedCluster(
        clock=SystemClock(), hold=False, seed=0, on_decision=seen, profiles=profiles
    )
    churn = ChurnOp(workload.churn, cluster.publish) if workload.churn else None
    await cluster.start()
    try:
        await cluster.publish(setup_documents(workload, nodes, init, pods))
        await cluster.bus.wait_idle()
        cycle_before, cpu_before = cycle_cpu(cluster), time.process_time()
        started = await measure(timings, cluster.publish, workload, pods, churn)
        cpu_used, cycle_used = time.process_time() - cpu_before, cycle_cpu(cluster) - cycle_before
    finally:
        await cluster.stop()
    elapsed = max(timings.decided.values()) - started
    counts = (workload.total_nodes(nodes), init, len(timings.decided))
    report = summary(workload.name, "embedded", counts, timings.latencies_ms(), elapsed)
    done = len(timings.decided)
    report.update(cpu_figures({"embedded": cpu_used * 1000 / done}, {}, cycle_used * 1000 / done))
    return with_churn(report, churn)


def cycle_cpu(cluster: EmbeddedCluster) -> float:
    """The embedded scheduler's CPU seconds inside ``schedule_pod`` so far."""
    registry = cluster.scheduler.metrics.registry
    return registry.get_sample_value("ksched_scheduling_cycle_cpu_seconds_total") or 0.0


async def measure(
    timings: Timings,
    publish: Publish,
    workload: Workload,
    pods: int,
    churn: ChurnOp | None,
    rate: float | None = None,
) -> float:
    """Publish the measured pods (and the churn, if any, until they are all decided) and
    wait for their decisions; returns when the measurement started."""
    if churn is not None:
        await churn.start()
    try:
        if workload.steady is not None:
            timings.steady = SteadyState(workload.steady, workload)
            started = await timings.steady.run(publish, timings.published)
            return started
        started = await timings.publish(publish, workload, pods, rate)
        await timings.done.wait()
    finally:
        if churn is not None:
            await churn.stop()
    return started


def with_churn(report: dict[str, object], churn: ChurnOp | None) -> dict[str, object]:
    """``unschedulable_churn``: the churn's objects created; ``churn_events``: its watch
    events published (recreate mode deletes too)."""
    if churn is not None:
        report["unschedulable_churn"] = churn.published
        report["churn_events"] = churn.events
    return report
