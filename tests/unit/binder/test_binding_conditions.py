"""DynamicResources' PreBind waits for the devices' binding conditions in the binder
(DRADeviceBindingConditions): the claim goes out at once, the pod waits at PreBind in
the store while the other pods of its batch bind, and the Binding follows only once
the stored claim (a client's MODIFIED) reports the condition True; a binding failure
condition or the timeout fails the cycle (Unreserve, error) with upstream's messages.
The fake clock drives the timeout; the binder's timer tick is called by hand."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import msgspec

from contracts import topology
from contracts.k8s import ResourceClaim
from contracts.messages import BindBatch, BindRequest, ResultBatch
from contracts.permit import PermitDecision
from services.binder.service import BinderService
from services.common.bus import Message
from services.common.clock import FakeClock
from services.common.store import ProjectedEntry
from services.common.store.memory import MemoryStore
from services.framework.plugins.dynamicresources.binding import (
    PendingClaim,
    PendingClaims,
    encoder,
)
from tests.builders import make_node, make_pod
from tests.builders.scheduling import store_node
from tests.unit.binder.support import RecordingBus, assume_on
from tests.unit.framework.plugins.dra.dynamicresources_cases import (
    PENDING,
    WITH_BINDING_CONDITIONS,
)
from tests.unit.framework.plugins.dra.plugin_support import (
    NAMESPACE,
    POD_NAME,
    POD_UID,
    with_device_status,
)

PROFILE = "default-scheduler"
CLAIM_KEY = f"{NAMESPACE}/{PENDING.metadata.name}"


@dataclass
class Run:
    bus: RecordingBus
    store: MemoryStore
    clock: FakeClock
    binder: BinderService

    async def apply_claim(self, claim: ResourceClaim) -> None:
        """The client's MODIFIED of the claim, as the store projects it."""
        seq = await self.store.applied_seq() + 1
        body = msgspec.json.encode(claim)
        await self.store.apply([ProjectedEntry(seq, "resourceclaim", CLAIM_KEY, body)])

    async def tick(self) -> None:
        await self.binder.tick()
        await self.bus.wait_idle()

    def results(self) -> list[tuple[str, str, str]]:
        out = []
        for m in self.bus.published:
            if m.exchange == topology.RESULTS.name:
                for r in msgspec.json.decode(m.body, type=ResultBatch).results:
                    out.append((r.name, r.outcome, r.message))
        return out

    def decisions(self) -> list[str]:
        return [m.routing_key for m in self.bus.published if m.exchange == "ksched.decisions"]


def request(name: str, uid: str, state: dict[str, msgspec.Raw] | None = None) -> BindRequest:
    return BindRequest(
        uid=uid,
        namespace=NAMESPACE,
        name=name,
        node="n1",
        attempt=1,
        profile=PROFILE,
        plugin_state=state or {},
    )


@asynccontextmanager
async def waiting_trainer() -> AsyncIterator[Run]:
    """The pod with a claim Reserve allocated (a device with binding conditions) and a
    pod without claims, in one BindBatch."""
    bus, store, clock = RecordingBus(), MemoryStore(), FakeClock()
    binder = BinderService(bus, store, clock)
    await binder.start()
    try:
        await store_node(store, make_node("n1"))
        pods = [make_pod(POD_NAME, NAMESPACE, uid=POD_UID), make_pod("web", NAMESPACE, uid="w")]
        await assume_on(store, pods, "n1")
        await Run(bus, store, clock, binder).apply_claim(PENDING)
        pending = PendingClaims(
            claims=[PendingClaim(claim=PENDING, allocation=WITH_BINDING_CONDITIONS)]
        )
        state = {"DynamicResources": msgspec.Raw(encoder.encode(pending))}
        batch = BindBatch(requests=[request(POD_NAME, POD_UID, state), request("web", "w")])
        bus.batches.clear()
        body = msgspec.json.encode(batch)
        await bus.publish([Message(topology.BIND.name, topology.BIND_KEY, body)])
        await bus.wait_idle()
        yield Run(bus, store, clock, binder)
    finally:
        await binder.stop()
        await bus.close()


def published_claim(run: Run) -> ResourceClaim:
    (claim,) = [
        msgspec.json.decode(m.body, type=ResourceClaim)
        for m in run.bus.published
        if m.routing_key == f"claim.{NAMESPACE}"
    ]
    return claim


async def test_the_claim_goes_out_first_and_the_pod_binds_once_its_condition_is_true() -> None:
    async with waiting_trainer() as run:
        # The claim and the pending Event at once; the other pod binds meanwhile.
        ns = NAMESPACE
        assert run.decisions() == [f"claim.{ns}", f"event.{ns}", f"binding.{ns}", f"event.{ns}"]
        events = [m for m in run.bus.published if m.routing_key == f"event.{NAMESPACE}"]
        pending_event = json.loads(events[0].body)
        assert pending_event["reason"] == "BindingConditionsPending"
        assert pending_event["message"] == "waiting for binding conditions for device on node n1"
        assert run.results() == [(POD_NAME, "waiting", ""), ("web", "bound", "")]
        (record,) = (await run.store.waiting()).values()
        assert (record.name, record.point, record.state) == (POD_NAME, "PreBind", "waiting")
        claim = published_claim(run)
        assert claim.status.allocation is not None
        assert claim.status.allocation.allocation_timestamp is not None
        assert [r.uid for r in claim.status.reserved_for] == [POD_UID]

        await run.tick()  # the client has not applied the claim yet
        await run.apply_claim(claim)
        await run.tick()  # applied, no device status yet
        await run.apply_claim(with_device_status(claim, condition="False", failed="False"))
        await run.tick()
        assert [r for r in run.results() if r[0] == POD_NAME] == [(POD_NAME, "waiting", "")]
        assert run.decisions().count(f"binding.{NAMESPACE}") == 1  # web's

        await run.apply_claim(with_device_status(claim, condition="True", failed="False"))
        await run.tick()
        assert [r for r in run.results() if r[0] == POD_NAME][1:] == [(POD_NAME, "bound", "")]
        bindings = [
            json.loads(m.body)["metadata"]["name"]
            for m in run.bus.published
            if m.routing_key == f"binding.{NAMESPACE}"
        ]
        assert bindings == ["web", POD_NAME]
        assert run.decisions().count(f"claim.{NAMESPACE}") == 1  # not published again
        assert await run.store.waiting() == {}


async def test_a_binding_failure_condition_fails_the_cycle() -> None:
    async with waiting_trainer() as run:
        claim = published_claim(run)
        await run.apply_claim(with_device_status(claim, condition="False", failed="True"))
        await run.tick()
        message = (
            'running PreBind plugin "DynamicResources": claim my-pod-my-resource binding '
            'failed: reason=Test, message=""'
        )
        assert [r for r in run.results() if r[0] == POD_NAME][1:] == [(POD_NAME, "error", message)]
        assert run.decisions().count(f"binding.{NAMESPACE}") == 1  # web's
        assert POD_UID not in await run.store.assumed()  # Unreserve: the room went back


async def test_the_wait_times_out() -> None:
    async with waiting_trainer() as run:
        await run.apply_claim(published_claim(run))  # applied; the driver never reports
        await run.clock.advance(599)
        await run.tick()
        assert [r for r in run.results() if r[0] == POD_NAME][1:] == []
        await run.clock.advance(1)
        await run.tick()
        message = 'running PreBind plugin "DynamicResources": device binding timeout'
        assert [r for r in run.results() if r[0] == POD_NAME][1:] == [(POD_NAME, "error", message)]
        assert run.decisions().count(f"binding.{NAMESPACE}") == 1


async def test_a_permit_decision_cannot_release_a_pod_waiting_at_prebind() -> None:
    async with waiting_trainer() as run:
        decision = PermitDecision(namespace=NAMESPACE, name=POD_NAME, plugin="DynamicResources")
        key = f"allow.{NAMESPACE}"
        body = msgspec.json.encode(decision)
        await run.bus.publish([Message(topology.PERMIT.name, key, body)])
        await run.bus.wait_idle()
        errors = [m for m in run.bus.published if m.exchange == topology.ERRORS.name]
        assert len(errors) == 1
        assert "is not waiting at Permit" in json.loads(errors[0].body)["reason"]
        (record,) = (await run.store.waiting()).values()
        assert record.state == "waiting"


async def test_a_claim_the_plugin_cannot_read_fails_that_pod_not_the_timers() -> None:
    async with waiting_trainer() as run:
        seq = await run.store.applied_seq() + 1
        broken = ProjectedEntry(seq, "resourceclaim", CLAIM_KEY, b'{"metadata": 5}')
        await run.store.apply([broken])
        await run.tick()
        [(_, outcome, message)] = [r for r in run.results() if r[0] == POD_NAME][1:]
        assert outcome == "error"
        assert message.startswith('running PreBind plugin "DynamicResources": Expected `object`')
