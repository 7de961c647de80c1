"""The embedded mode: every service, the same code, on the in-memory bus, store and log,
in one process. ``simulate``, ``replay`` and the embedded benchmark run on it.

With a FakeClock the run is deterministic: :meth:`EmbeddedCluster.settle` waits until
nothing moves, and when only pods in backoff are left it advances the clock to their
expiry instead of sleeping, as long as one of them may still make progress (see
cli.progress): a pod that nothing could help is not retried for ever.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from contracts import topology
from contracts.k8s import Binding, Decision, Event, namespaced_name
from contracts.preemption import Preemption
from services.binder.service import POLL, BinderService
from services.cli import claims
from services.cli.claims import CLAIM_ALLOCATION
from services.cli.manifests import Document
from services.cli.progress import MAX_SAME_FAILURES, Progress
from services.common import features
from services.common.bus import Delivery, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import Clock, FakeClock
from services.common.decisions import ATTEMPT_HEADER, EXPLAIN_ANNOTATION
from services.common.eventlog import EventLog
from services.common.eventlog.memory import MemoryEventLog
from services.common.settings import QueueSettings, SchedulerSettings
from services.common.store.memory import MemoryStore
from services.framework.api.preemption import Preempting
from services.framework.config import Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.informer.service import InformerService
from services.queue.profiles import QueueProfile
from services.queue.service import QueueService
from services.scheduler.service import SchedulerService

WATCH_QUEUE = topology.QueueSpec(
    "ksched.embedded.decisions",
    (topology.QueueBinding(topology.DECISIONS.name, "#"),),
    durable=False,
    exclusive=True,
    auto_delete=True,
    dead_letter=False,
)


PREEMPTION = "Preemption"
NOT_READY = "NotReadyForScheduling"
"""The kind of the record of a pod the run ends with held back at PreEnqueue."""


log = logging.getLogger("ksched.embedded")


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    kind: str
    """``Binding``, ``FailedScheduling``, ``Scheduled``, ``Preemption``,
    ``NotReadyForScheduling`` or ``ClaimAllocation``."""
    pod: str
    attempts: int
    node: str | None = None
    message: str | None = None
    at: float = 0.0
    explain: Mapping[str, Any] | None = None
    """The scheduler's explanation, when it gave one (see framework.explain)."""
    victims: tuple[str, ...] = ()
    """A Preemption's victims (``namespace/name``, most important first); its ``node``
    is the preemptor's nominated node."""
    plugin: str | None = None
    """NotReadyForScheduling: the PreEnqueue plugin holding the pod back."""
    claim: str | None = None
    """ClaimAllocation: the claim (``namespace/name``); ``node`` is the pod's."""
    pod_claim: str | None = None
    """ClaimAllocation: the name the pod gives the claim (``spec.resourceClaims[].name``)."""
    results: tuple[Mapping[str, str], ...] = ()
    """ClaimAllocation: each allocated device (``request``, ``driver``, ``pool``, ``device``)."""

    def to_json(self) -> dict[str, object]:
        if self.kind == CLAIM_ALLOCATION:
            return {
                "kind": self.kind,
                "claim": self.claim,
                "pod": self.pod,
                "podClaim": self.pod_claim,
                "node": self.node,
                "results": [dict(r) for r in self.results],
            }
        out: dict[str, object] = {"kind": self.kind, "pod": self.pod}
        if self.kind == NOT_READY:
            return {**out, "plugin": self.plugin, "message": self.message}
        if self.kind == PREEMPTION:
            out["nominatedNode"] = self.node
            out["victims"] = list(self.victims)
        elif self.node is not None:
            out["node"] = self.node
        if self.message is not None:
            out["message"] = self.message
        out["attempts"] = self.attempts
        if self.explain is not None:
            out["explain"] = self.explain
        return out


def explanation_of(annotations: Mapping[str, str]) -> dict[str, Any] | None:
    """The explanation a decision carries (annotation ``ksched.io/explain``), if any."""
    text = annotations.get(EXPLAIN_ANNOTATION)
    if not text:
        return None
    explanation = json.loads(text)
    return explanation if isinstance(explanation, dict) else None


def record_of(delivery: Delivery, now: float) -> DecisionRecord | None:
    """The decision a message on ``ksched.decisions`` carries (None for other Events and
    for the other decisions: waiting pods, PodGroup status)."""
    attempts = int(delivery.headers.get(ATTEMPT_HEADER, "0"))
    if delivery.routing_key.startswith("preemption."):
        preemption = msgspec.json.decode(delivery.body, type=Preemption)
        who = preemption.preemptor
        return DecisionRecord(
            PREEMPTION,
            f"{who.namespace}/{who.name}",
            attempts,
            node=preemption.nominated_node,
            at=now,
            victims=tuple(f"{v.namespace}/{v.name}" for v in preemption.victims),
        )
    if not delivery.routing_key.startswith(("binding.", "event.")):
        return None
    decision = msgspec.json.decode(delivery.body, type=Decision)
    match decision:
        case Binding(metadata=meta, target=target):
            explain = explanation_of(meta.annotations)
            pod = namespaced_name(meta)
            return DecisionRecord(
                "Binding", pod, attempts, node=target.name, at=now, explain=explain
            )
        case Event(reason="FailedScheduling", involved_object=obj, message=message):
            pod = f"{obj.namespace or 'default'}/{obj.name}"
            explain = explanation_of(decision.metadata.annotations)
            return DecisionRecord(
                "FailedScheduling", pod, attempts, message=message, at=now, explain=explain
            )
        case _:
            return None


class EmbeddedCluster:
    def __init__(
        self,
        *,
        clock: Clock | None = None,
        seed: int | None = None,
        profiles: Sequence[Profile] | None = None,
        event_log: EventLog | None = None,
        hold: bool = True,
        scheduled_events: bool = False,
        max_in_flight: int = 512,
        dispatch_batch: int = 128,
        on_decision: Callable[[DecisionRecord], None] | None = None,
        explain: bool = False,
        max_same_failures: int = MAX_SAME_FAILURES,
        generate_claims: bool = True,
    ) -> None:
        """``explain``: the scheduler explains every decision (``--explain``).
        ``max_same_failures``: see cli.progress.MAX_SAME_FAILURES. ``generate_claims``:
        the informer's resourceclaim controller runs (a replay turns it off: the log
        holds the claims it generated); its names are drawn from ``seed``."""
        self.clock = clock or FakeClock()
        self._stall = (0, 0)
        """(log seq, attempts dispatched) when the log last moved (see _dispatched)."""
        self.progress = Progress(max_same_failures)
        self.bus = MemoryBus()
        self.store = MemoryStore()
        self.log = event_log or MemoryEventLog()
        self.decisions: list[DecisionRecord] = []
        self._on_decision = on_decision
        self._claims: dict[str, list[DecisionRecord]] = {}
        """Pod → the ClaimAllocation records of its claims, until its Binding (their
        node) comes: each is recorded just before it."""
        self._allocations: dict[str, tuple[Mapping[str, str], ...]] | None = None
        """Each claim's allocation as last seen: a decision that allocates nothing new (a
        claim already allocated, reserved for one more pod) is not recorded."""
        # One store client per service, as each process has its own on Redis.
        self.informer = InformerService(
            self.bus,
            self.store.client(),
            self.log,
            self.clock,
            rng=random.Random(seed),
            generate_claims=generate_claims,
        )
        preempting = Preempting()
        self.queue = QueueService(
            self.bus,
            self.store.client(),
            self.clock,
            profiles=[
                QueueProfile.of(
                    Framework(p, in_tree_registry(), now=self.clock.now, preempting=preempting)
                )
                for p in profiles or (default_profile(),)
            ],
            settings=QueueSettings(
                max_in_flight=max_in_flight,
                dispatch_batch=dispatch_batch,
                **features.setting_overrides(features.current()),
            ),
            hold=hold,
            preempting=preempting,
            on_dispatch=self._dispatched,
        )
        self.scheduler = SchedulerService(
            self.bus,
            self.store.client(),
            self.clock,
            profiles,
            settings=SchedulerSettings(replica="embedded", seed=seed, explain=explain),
        )
        self.binder = BinderService(
            self.bus,
            self.store.client(),
            self.clock,
            profiles,
            scheduled_events=scheduled_events,
        )

    async def start(self) -> None:
        await self.bus.declare(topology.QUEUES)
        await self.bus.consume_raw(WATCH_QUEUE, self._on_decisions, max_batch=1024)
        await self.informer.start()
        await self.scheduler.start()
        await self.binder.start()
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()
        await self.binder.stop()
        await self.scheduler.stop()
        await self.informer.stop()
        await self.bus.close()

    async def publish(self, documents: Sequence[Document], chunk: int = 1024) -> None:
        for start in range(0, len(documents), chunk):
            await self.bus.publish(
                [
                    Message(topology.EVENTS.name, d.routing_key, d.body)
                    for d in documents[start : start + chunk]
                ]
            )

    async def publish_and_schedule(self, documents: Sequence[Document]) -> None:
        """Publish ``documents`` with the queue held and let them settle, then release
        the queue and settle again: every object is in place before the first attempt."""
        self.hold()
        await self.publish(documents)
        await self.settle()
        self.release()
        await self.settle()

    def hold(self) -> None:
        self.queue.hold()

    def release(self) -> None:
        self.queue.release()

    async def settle(self) -> None:
        """Return when no message, attempt or expired backoff is left to process. With a
        FakeClock, time jumps to the next backoff expiry while a pod backing off may
        still make progress (cli.progress); pods that cannot stay where they are."""
        queue = self.queue.queue
        while True:
            await self.bus.wait_idle()
            counts = queue.counts()
            if self.queue.in_flight or (counts["active"] and not self.queue.held):
                await asyncio.sleep(0)
                continue
            self.progress.quiet(queue.pods(), self.queue.applied_seq)
            expiry = queue.next_backoff_expiry()
            due = await self.store.next_waiting_deadline()
            if due is not None and isinstance(self.clock, FakeClock):
                # Pods wait at Permit: their timers run on the fake clock too, and the
                # binder's timers look at the store at least every POLL seconds.
                await self.clock.advance(min(max(due - self.clock.now(), 0.0), POLL) + 1e-3)
                continue
            if (
                expiry is not None
                and not self.queue.held
                and isinstance(self.clock, FakeClock)
                and self.progress.any_may_progress(queue.pods())
            ):
                await self.clock.advance(max(expiry - self.clock.now(), 0.0) + 1.0)
                continue
            return

    def report_held_back(self) -> list[DecisionRecord]:
        """A ``NotReadyForScheduling`` record (its plugin and message) for each pod
        PreEnqueue holds back now, in arrival order; recorded as decisions. Taken from
        the queue, not from the ``status.<namespace>`` patches: those wait 5 s of the
        clock, which the run does not advance for them (it ends when nothing else is
        left to do), so a pod held back to the end is reported all the same."""
        now = self.clock.now()
        held = sorted((i for i in self.queue.queue.pods() if i.gated), key=lambda i: i.order)
        records = [
            DecisionRecord(
                NOT_READY,
                namespaced_name(i.pod.metadata),
                i.attempts,
                message=i.message,
                at=now,
                plugin=i.gating_plugin,
            )
            for i in held
        ]
        for record in records:
            self.decisions.append(record)
            if self._on_decision is not None:
                self._on_decision(record)
        return records

    def _dispatched(self) -> None:
        """After each dispatch: stop dispatching when the pods keep being attempted and
        the cluster does not change, :data:`MAX_SAME_FAILURES` attempts per queued pod
        since the log last moved. Nothing outside changes the cluster here, so such a
        run only repeats itself: a gang that cannot complete, retried as its members
        give their room back and activate each other (upstream's would retry it for
        ever too, without ``podGroupBackoffSeconds``)."""
        seq, dispatched = self.queue.applied_seq, self.queue.dispatched
        if seq != self._stall[0]:
            self._stall = (seq, dispatched)
        elif dispatched - self._stall[1] > MAX_SAME_FAILURES * max(len(self.queue.queue), 1):
            attempts = dispatched - self._stall[1]
            log.info("no change to the cluster in %d attempts: stopped", attempts)
            self.queue.hold()

    async def _on_decisions(self, deliveries: Sequence[Delivery]) -> None:
        for delivery in deliveries:
            if delivery.routing_key.startswith(f"{topology.CLAIM_DECISION}."):
                await self._allocated(delivery)
                continue
            if delivery.routing_key.startswith("status."):
                await self._pod_status(delivery)
                continue
            record = record_of(delivery, self.clock.now())
            if record is None:
                continue
            if record.kind == "Binding":
                for claimed in self._claims.pop(record.pod, ()):
                    self._record(replace(claimed, node=record.node, at=record.at))
            self._record(record)
            if record.kind == PREEMPTION:
                await self._delete(record.victims)

    def _record(self, record: DecisionRecord) -> None:
        self.decisions.append(record)
        if self._on_decision is not None:
            self._on_decision(record)

    async def _allocated(self, delivery: Delivery) -> None:
        """A claim's allocation (``claim.<namespace>``): applied at once, as the API
        server would store it (its MODIFIED watch event), and recorded before the
        Binding of the pod it is reserved for. A deallocation (DynamicResources'
        PostFilter) is applied alike and not recorded."""
        if self._allocations is None:  # the claims allocated before the first decision
            stored = await self.store.objects("resourceclaim")
            self._allocations = {}
            for body in stored.values():
                known = claims.decode_claim(body)
                self._allocations[claims.claim_key(known)] = claims.results(known)
        await self.bus.publish([claims.applied(delivery.body)])
        claim = claims.decode_claim(delivery.body)
        pod_key = claims.reserved_pod(claim)
        allocated = claims.results(claim)
        key = claims.claim_key(claim)
        if not allocated:  # PostFilter's deallocation: the devices are free once applied
            self._allocations[key] = ()
            return
        if pod_key is None or self._allocations.get(key) == allocated:
            return  # only a reservation for another pod: the claim was allocated before
        self._allocations[key] = allocated
        pod = claims.pod_of(await self.store.objects("pod"), pod_key)
        record = DecisionRecord(
            CLAIM_ALLOCATION,
            pod_key,
            int(delivery.headers.get(ATTEMPT_HEADER, "0")),
            claim=key,
            pod_claim=claims.pod_claim_name(pod, claim) if pod is not None else None,
            results=allocated,
        )
        self._claims.setdefault(pod_key, []).append(record)

    async def _pod_status(self, delivery: Delivery) -> None:
        """A pod status update the binder published (the pod's extended-resource claim):
        applied at once, as the API server would store it."""
        applied = claims.pod_status_applied(await self.store.objects("pod"), delivery.body)
        if applied is not None:
            await self.bus.publish([applied])

    async def _delete(self, pods: Sequence[str]) -> None:
        """What the API server does once a client deletes preemption's victims: their
        ``DELETED`` watch events, so the run goes on to its end."""
        stored = await self.store.objects("pod")
        key = topology.event_key("pod", "DELETED")
        messages = [
            Message(
                topology.EVENTS.name,
                key,
                b'{"type":"DELETED","object":' + stored[pod] + b"}",
            )
            for pod in pods
            if pod in stored
        ]
        if messages:
            await self.bus.publish(messages)
