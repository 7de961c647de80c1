"""The embedded services for Permit tests (in-memory bus and store, FakeClock): a
:class:`Run` that records the waiting announcements and permit errors, a profile with
ExternalPermit and/or Coscheduling (:func:`config`), and PodGroups with their members."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import msgspec

from contracts import topology
from contracts.errors import ErrorReport
from contracts.k8s import Pod
from contracts.permit import PermitDecision, WaitingPod, permit_key
from services.cli.embedded import DecisionRecord, EmbeddedCluster
from services.cli.simulate import load_cluster
from services.common.bus import Delivery, Message
from services.common.clock import FakeClock
from services.framework.config import load_config
from tests.builders import make_pod, manifest

START = 1_700_000_000.0
NODE = "kind: Node\nmetadata: {name: n%d}\nstatus: {allocatable: {cpu: '2', pods: '110'}}\n"
BIG_NODE = "kind: Node\nmetadata: {name: n%d}\nstatus: {allocatable: {cpu: '8', pods: '110'}}\n"


def group(name: str, min_member: int, created: str, timeout: int | None = None) -> str:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    obj = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": spec,
    }
    return msgspec.json.encode(obj).decode()


def member(name: str, group_name: str, **labels: str) -> Pod:
    return make_pod(
        name, requests={"cpu": "1"}, labels={"scheduling.x-k8s.io/pod-group": group_name, **labels}
    )


def config(
    *, external: int | None = None, gang: int | None = None, gang_post_filter: bool = True
) -> Any:
    """``gang_post_filter=False``: Coscheduling everywhere but at PostFilter (a gang
    that cannot complete ends by its Permit timeout)."""
    plugins: dict[str, Any] = {}
    args: list[dict[str, Any]] = []
    if gang is not None:
        plugins["multiPoint"] = {"enabled": [{"name": "Coscheduling"}]}
        if not gang_post_filter:
            plugins["postFilter"] = {"disabled": [{"name": "Coscheduling"}]}
        plugins["queueSort"] = {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}
        args.append({"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": gang}})
    if external is not None:
        plugins["permit"] = {"enabled": [{"name": "ExternalPermit"}]}
        args.append(
            {
                "name": "ExternalPermit",
                "args": {"timeoutSeconds": external, "selector": {"matchLabels": {"gate": "on"}}},
            }
        )
    profile = {"schedulerName": "default-scheduler", "plugins": plugins, "pluginConfig": args}
    return load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [profile],
        }
    ).profiles


class Run:
    """An embedded cluster that also records the waiting announcements and errors."""

    def __init__(self, profiles: Any, max_in_flight: int = 512) -> None:
        self.decisions: list[DecisionRecord] = []
        self.clock = FakeClock(START)
        self.cluster = EmbeddedCluster(
            clock=self.clock,
            seed=1,
            profiles=profiles,
            on_decision=self.decisions.append,
            max_in_flight=max_in_flight,
        )
        self.waiting: list[WaitingPod] = []
        self.errors: list[ErrorReport] = []

    async def start(self, *docs: object) -> None:
        bus = self.cluster.bus
        await self.cluster.start()
        await bus.consume_raw(
            _watch("test.waiting", topology.DECISIONS.name, "waiting.#"), self._waits
        )
        await bus.consume_raw(
            _watch("test.errors", topology.ERRORS.name, "error.permit"), self._errs
        )
        await self.cluster.publish(load_cluster(manifest(*docs), "test.yaml"))
        self.cluster.release()
        await self.idle()

    async def _waits(self, deliveries: Sequence[Delivery]) -> None:
        self.waiting += [msgspec.json.decode(d.body, type=WaitingPod) for d in deliveries]

    async def _errs(self, deliveries: Sequence[Delivery]) -> None:
        self.errors += [msgspec.json.decode(d.body, type=ErrorReport) for d in deliveries]

    async def idle(self) -> None:
        for _ in range(5):
            await self.cluster.bus.wait_idle()
            for _ in range(20):
                await asyncio.sleep(0)

    async def decide(
        self, verdict: str, name: str, plugin: str = "ExternalPermit", **kw: str
    ) -> None:
        body = msgspec.json.encode(
            PermitDecision(namespace="default", name=name, plugin=plugin, **kw)
        )
        key = permit_key(verdict, "default")  # type: ignore[arg-type]
        await self.cluster.bus.publish([Message(topology.PERMIT.name, key, body)])
        await self.idle()

    async def advance(self, seconds: float) -> None:
        """Move the fake clock in steps the binder's timers see."""
        end = self.clock.now() + seconds
        while self.clock.now() < end:
            await self.clock.advance(min(0.5, end - self.clock.now()))
            await self.idle()

    def last(self) -> dict[str, DecisionRecord]:
        return {d.pod: d for d in self.decisions}

    async def stop(self) -> None:
        await self.cluster.stop()


def _watch(name: str, exchange: str, key: str) -> topology.QueueSpec:
    binding = topology.QueueBinding(exchange, key)
    return topology.QueueSpec(name, (binding,), durable=False, auto_delete=True, dead_letter=False)
