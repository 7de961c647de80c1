"""The descheduler service (``ksched run descheduler``): a descheduling cycle every
``deschedulingInterval`` over the cluster as Redis holds it, evictions published on
``ksched.decisions``.

One instance is active at a time: ``ksched run descheduler`` starts the service only
once it leads the ``descheduler`` leader lease (services.common.leaderelection; renewed
in the background, released on stop), and every write it makes to the store carries
the lease's fencing token. Each cycle:

1. reads the cluster from the store (nodes, pods, PDBs, priority classes, namespaces,
   claims) and the evictions still outstanding (published, the pod not deleted yet;
   a pod's DELETED watch event drops its record in the store), and asks Prometheus
   the policy's queries when it names a Prometheus metrics provider;
2. runs every profile (services.descheduler.profile) with the scheduler framework's
   filters answering nodeFit;
3. records the evictions in Redis *before* publishing them, then publishes, per
   eviction, a ``policy/v1`` Eviction (``eviction.<namespace>``) and a Normal Event
   on the pod (``pod eviction from <node> node by sigs.k8s.io/descheduler``).

Killed between 3's two steps, a restarted descheduler finds the evictions recorded and
never evicts those pods again nor exceeds a limit with them; at worst an eviction is
recorded but never published (the pod stays). With ``dry_run`` nothing is recorded or
published: each eviction is logged. With an interval of 0 the service runs one cycle
and finishes, as upstream's descheduler does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

import msgspec

from contracts import topology
from contracts.eviction import (
    NODE_ANNOTATION,
    PLUGIN_ANNOTATION,
    PROFILE_ANNOTATION,
    REQUESTED_BY,
    DeleteOptions,
    Eviction,
    Preconditions,
)
from contracts.k8s import (
    DeviceClass,
    Namespace,
    Node,
    NodeMetrics,
    ObjectMeta,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodMetrics,
    PriorityClass,
    ResourceClaim,
    ResourceSlice,
)
from services.common import failpoints
from services.common.bus import Bus, Message
from services.common.clock import Clock
from services.common.decisions import pod_event
from services.common.metrics import MetricsEndpoint, close_endpoint, serve_metrics
from services.common.settings import DeschedulerSettings
from services.common.store import ClusterStore
from services.descheduler.api import ClusterView, EvictOptions, Registry
from services.descheduler.evictions import Evicted
from services.descheduler.metrics import DeschedulerMetrics
from services.descheduler.nodefit import SchedulerFit
from services.descheduler.podutil import key
from services.descheduler.policy import Policy
from services.descheduler.profile import CycleResult, run_cycle
from services.descheduler.prometheus import prometheus_usage
from services.descheduler.usage import COLLECT_INTERVAL, NodeUsageCollector
from services.framework.config import Profile

log = logging.getLogger("ksched.descheduler")
T = TypeVar("T")

DRA_KINDS: Final = {
    "deviceclass": DeviceClass,
    "resourceslice": ResourceSlice,
    "resourceclaim": ResourceClaim,
}
"""The DRA objects nodeFit's DynamicResources filter reads."""


@dataclass
class CycleReport:
    evicted: list[Evicted]
    result: CycleResult


def eviction_of(evicted: Evicted, grace: int | None) -> Eviction:
    pod, options = evicted.pod, evicted.options
    reason = f"triggered by {options.profile}/{options.plugin}: {options.reason}"
    return Eviction(
        api_version="policy/v1",
        metadata=ObjectMeta(
            name=pod.metadata.name,
            namespace=pod.metadata.namespace or "default",
            annotations={
                "reason": reason,
                "requested-by": REQUESTED_BY,
                PROFILE_ANNOTATION: options.profile,
                PLUGIN_ANNOTATION: options.plugin,
                NODE_ANNOTATION: evicted.node,
            },
        ),
        delete_options=DeleteOptions(
            grace_period_seconds=grace, preconditions=Preconditions(uid=pod.metadata.uid)
        ),
    )


def _decode(raw: dict[str, bytes], kind: type[T]) -> list[T]:
    decoder = msgspec.json.Decoder(kind)
    out: list[T] = []
    for body in raw.values():
        try:
            out.append(decoder.decode(body))
        except msgspec.ValidationError as error:  # the informer validated it: a bug
            log.warning("skipping an undecodable %s in the store: %s", kind.__name__, error)
    return out


class DeschedulerService:
    def __init__(
        self,
        bus: Bus,
        store: ClusterStore,
        clock: Clock,
        policy: Policy,
        registry: Registry,
        settings: DeschedulerSettings,
        profiles: Sequence[Profile] | None = None,
        metrics_port: int | None = None,
    ) -> None:
        self._bus = bus
        self._store = store
        self._clock = clock
        self.policy = policy
        self.registry = registry
        self.settings = settings
        self.profiles = profiles
        self.finished = asyncio.Event()
        """Set when the service has nothing more to do (interval 0, one cycle run)."""
        self._task: asyncio.Task[None] | None = None
        self.usage = NodeUsageCollector()
        self._collector: asyncio.Task[None] | None = None
        self.metrics = DeschedulerMetrics(_version())
        self._metrics_port = metrics_port
        self.endpoint: MetricsEndpoint | None = None

    async def start(self) -> None:
        self.endpoint = serve_metrics(self.metrics.registry, self._metrics_port)
        if self.policy.collects_metrics:
            self._collector = asyncio.create_task(self._collect_loop(), name="metrics-collector")
        self._task = asyncio.create_task(self._loop(), name="descheduler")

    async def stop(self) -> None:
        for task in (self._task, self._collector):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        close_endpoint(self.endpoint)
        self.endpoint = None

    async def _loop(self) -> None:
        try:
            while True:
                try:
                    report = await self.run_once()
                    log.info(
                        "cycle: %d evicted on %d nodes%s",
                        len(report.evicted),
                        len(report.result.nodes),
                        f" ({report.result.skipped})" if report.result.skipped else "",
                    )
                except Exception as error:  # the next cycle tries again
                    log.warning("descheduling cycle failed: %s", error)
                if self.settings.interval <= 0:
                    return
                await self._clock.sleep(self.settings.interval)
        finally:
            self.finished.set()

    async def collect(self) -> None:
        """One round of the metrics collector: every NodeMetrics the store holds
        folded into the smoothed node usage."""
        samples = _decode(await self._store.objects("nodemetrics"), NodeMetrics)
        for error in self.usage.collect(samples):
            log.warning("%s", error)

    async def _collect_loop(self) -> None:
        while True:
            try:
                await self.collect()
            except Exception as error:  # the next round tries again
                log.warning("collecting node metrics failed: %s", error)
            await self._clock.sleep(COLLECT_INTERVAL)

    async def read_cluster(self) -> ClusterView:
        objects = self._store.objects
        nodes = _decode(await objects("node"), Node)
        pods = _decode(await objects("pod"), Pod)
        pdbs = _decode(await objects("poddisruptionbudget"), PodDisruptionBudget)
        classes = _decode(await objects("priorityclass"), PriorityClass)
        namespaces = _decode(await objects("namespace"), Namespace)
        claims = _decode(await objects("persistentvolumeclaim"), PersistentVolumeClaim)
        if self.policy.collects_metrics and not self.usage.synced:
            await self.collect()  # upstream waits for the collector's first sync
        pod_metrics = _decode(await objects("podmetrics"), PodMetrics)
        prometheus = None
        if self.policy.prometheus is not None:
            # Blocking HTTP, off the loop.
            token = self.settings.prometheus_token_file
            prometheus, problem = await asyncio.to_thread(prometheus_usage, self.policy, token)
            if problem:
                log.warning("prometheus client not initialized: %s", problem)
        dra: list[object] = []
        for kind, cls in DRA_KINDS.items():
            dra += _decode(await objects(kind), cls)
        return ClusterView(
            nodes,
            pods,
            self._clock.now(),
            {n.metadata.name: n for n in namespaces},
            pdbs,
            {(c.metadata.namespace or "default", c.metadata.name): c for c in claims},
            {c.metadata.name: c for c in classes},
            self.usage.usage() if self.policy.collects_metrics else None,
            {(m.metadata.namespace or "default", m.metadata.name): m for m in pod_metrics},
            dra,
            prometheus,
        )

    async def run_once(self) -> CycleReport:
        """One cycle."""
        cluster = await self.read_cluster()
        recorded = await self._store.evictions()
        present = {p.metadata.uid: p for p in cluster.pods}
        gone = [uid for uid in recorded if uid not in present]
        if gone:
            await self._store.drop_evictions(gone)
        outstanding = [present[uid] for uid in recorded if uid in present]
        fit = SchedulerFit(cluster, self.profiles)
        started = time.perf_counter()
        evictor, result = run_cycle(
            self.policy,
            self.registry,
            cluster,
            fit,
            outstanding=outstanding,
            on_result=self._count,
            on_plugin=self.metrics.ran,
        )
        self.metrics.cycle(time.perf_counter() - started)
        for error in result.errors:
            log.warning("%s", error)
        if self.settings.dry_run:
            for e in evictor.evicted:
                log.info(
                    "would evict %s from %s (%s/%s)",
                    key(e.pod), e.node, e.options.profile, e.options.plugin,
                )  # fmt: skip
            return CycleReport(evictor.evicted, result)
        if evictor.evicted:
            await self._store.record_evictions(
                {e.pod.metadata.uid: key(e.pod) for e in evictor.evicted}
            )
            failpoints.hit("descheduler-after-record")
            await self._bus.publish(self.messages(evictor.evicted))
        return CycleReport(evictor.evicted, result)

    def _count(self, pod: Pod, options: EvictOptions, result: str) -> None:
        self.metrics.evicted(
            result,
            options.plugin,
            options.profile,
            pod.metadata.namespace or "default",
            pod.spec.node_name or "",
        )

    def messages(self, evicted: Sequence[Evicted]) -> list[Message]:
        encode = msgspec.json.encode
        now = self._clock.now()
        out = []
        for e in evicted:
            ns = e.pod.metadata.namespace or "default"
            eviction = eviction_of(e, self.policy.grace_period_seconds)
            out.append(
                Message(
                    topology.DECISIONS.name, topology.decision_key("eviction", ns), encode(eviction)
                )
            )
            event = pod_event(
                e.pod,
                reason=e.reason,
                message=f"pod eviction from {e.node} node by {REQUESTED_BY}",
                warning=False,
                action="Descheduled",
                attempt=0,
                now=now,
                scheduler_name=REQUESTED_BY,
            )
            out.append(
                Message(topology.DECISIONS.name, topology.decision_key("event", ns), encode(event))
            )
        return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ksched")
    except PackageNotFoundError:
        return "0"


__all__ = ["CycleReport", "DeschedulerService", "DeschedulerSettings", "eviction_of"]
