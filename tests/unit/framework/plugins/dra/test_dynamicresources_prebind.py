"""DynamicResources' PreBind and the wait for binding conditions after it (upstream's
PreBind polling ``isPodReadyForBinding`` up to ``bindingTimeout``): PreBind publishes
the claims and asks the binder to wait; ``binding_ready`` on the claims as stored says
ready, failed (upstream's messages), or keep waiting until the deadline. Time is the
``now`` the caller passes: no clock runs here."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from contracts.k8s import ResourceClaim
from services.common import features
from services.framework.api.effects import ClaimStatusEffect
from services.framework.api.interface import CycleState
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.dynamicresources import DynamicResources, DynamicResourcesArgs
from services.framework.plugins.dynamicresources.binding import (
    PendingClaim,
    PendingClaims,
    encoder,
)
from tests.builders import make_pod
from tests.unit.framework.plugins.dra.dynamicresources_cases import (
    NOW,
    PENDING,
    STAMP,
    WITH_BINDING_CONDITIONS,
    reserved_update,
)
from tests.unit.framework.plugins.dra.plugin_support import (
    ALLOCATION,
    NAMESPACE,
    NODE,
    POD_NAME,
    POD_UID,
    listers_of,
    with_device_status,
)

TIMEOUT = 600.0
DEADLINE = NOW + TIMEOUT


def plugin() -> DynamicResources:
    return DynamicResources(DynamicResourcesArgs().defaulted(), listers_of(), now=lambda: NOW)


def pre_bind(p: DynamicResources, *items: PendingClaim) -> CycleState:
    """PreBind in a binder's CycleState restored from the binding state of ``items``."""
    state = CycleState()
    p.restore_binding_state(state, encoder.encode(PendingClaims(claims=list(items))))
    pod = PodInfo.of(make_pod(POD_NAME, NAMESPACE, uid=POD_UID))
    assert asyncio.run(p.pre_bind(state, pod, NODE)) == SUCCESS
    return state


def resumed(p: DynamicResources, data: bytes) -> CycleState:
    state = CycleState()
    p.restore_binding_state(state, data)
    return state


def stored(*claims: ResourceClaim) -> dict[str, bytes]:
    """The store's resourceclaim objects: ``namespace/name`` → JSON."""
    return {f"{c.metadata.namespace}/{c.metadata.name}": msgspec.json.encode(c) for c in claims}


PUBLISHED = reserved_update(PENDING, WITH_BINDING_CONDITIONS)
"""The claim PreBind publishes: allocated (with binding conditions), stamped, reserved."""


def test_prebind_publishes_the_claim_then_asks_to_wait_for_its_binding_conditions() -> None:
    p = plugin()
    state = pre_bind(p, PendingClaim(claim=PENDING, allocation=WITH_BINDING_CONDITIONS))
    assert state.effects == [ClaimStatusEffect(PUBLISHED)]
    wait = p.binding_wait(state, NODE)
    assert wait is not None
    assert (wait.timeout, wait.reason) == (TIMEOUT, "BindingConditionsPending")
    assert wait.message == f"waiting for binding conditions for device on node {NODE}"

    # Resumed after the wait, PreBind has nothing left to publish nor to wait for.
    again = resumed(p, wait.state)
    pod = PodInfo.of(make_pod(POD_NAME, NAMESPACE, uid=POD_UID))
    assert asyncio.run(p.pre_bind(again, pod, NODE)) == SUCCESS
    assert again.effects == []
    assert p.binding_wait(again, NODE) is None


def test_no_binding_conditions_no_wait() -> None:
    p = plugin()
    state = pre_bind(p, PendingClaim(claim=PENDING, allocation=ALLOCATION))
    assert len(state.effects) == 1
    assert p.binding_wait(state, NODE) is None


def test_no_wait_with_the_gates_off(monkeypatch: pytest.MonkeyPatch) -> None:
    gates = features.FeatureGates({"DRADeviceBindingConditions": False})
    monkeypatch.setattr(features, "_current", gates)
    p = DynamicResources(DynamicResourcesArgs(), listers_of(), now=lambda: NOW)
    state = pre_bind(p, PendingClaim(claim=PENDING, allocation=WITH_BINDING_CONDITIONS))
    assert len(state.effects) == 1
    assert p.binding_wait(state, NODE) is None


def waiting_state(p: DynamicResources) -> CycleState:
    state = pre_bind(p, PendingClaim(claim=PENDING, allocation=WITH_BINDING_CONDITIONS))
    wait = p.binding_wait(state, NODE)
    assert wait is not None
    return resumed(p, wait.state)


def test_ready_once_the_stored_claim_reports_its_condition_true() -> None:
    p = plugin()
    state = waiting_state(p)
    # Not applied by the client yet (no allocation in the store): keep waiting.
    assert p.binding_ready(state, stored(PENDING), NOW + 1, DEADLINE) is None
    # Applied, no device status yet: keep waiting.
    assert p.binding_ready(state, stored(PUBLISHED), NOW + 2, DEADLINE) is None
    pending = with_device_status(PUBLISHED, condition="False", failed="False")
    assert p.binding_ready(state, stored(pending), NOW + 3, DEADLINE) is None
    ready = with_device_status(PUBLISHED, condition="True", failed="False")
    assert p.binding_ready(state, stored(ready), NOW + 4, DEADLINE) == SUCCESS


def test_a_binding_failure_condition_fails_with_upstreams_message() -> None:
    p = plugin()
    state = waiting_state(p)
    failed = with_device_status(PUBLISHED, condition="False", failed="True")
    assert p.binding_ready(state, stored(failed), NOW + 5, DEADLINE) == Status(
        Code.Error,
        ('claim my-pod-my-resource binding failed: reason=Test, message=""',),
    )


def test_the_wait_times_out_with_upstreams_message() -> None:
    p = plugin()
    state = waiting_state(p)
    # The stored claim never got its allocation: only the wait's own deadline ends it.
    assert p.binding_ready(state, stored(PENDING), DEADLINE - 1, DEADLINE) is None
    assert p.binding_ready(state, stored(PENDING), DEADLINE, DEADLINE) == Status(
        Code.Error, ("device binding timeout",)
    )


def test_a_claim_allocated_longer_than_the_binding_timeout_ago_times_out() -> None:
    p = plugin()
    state = waiting_state(p)
    assert PUBLISHED.status.allocation is not None
    assert PUBLISHED.status.allocation.allocation_timestamp == STAMP
    pending = with_device_status(PUBLISHED, condition="False", failed="False")
    later = NOW + TIMEOUT + 1  # allocationTimestamp (NOW) + bindingTimeout has passed
    assert p.binding_ready(state, stored(pending), later, later + 100) == Status(
        Code.Error, ("claim my-pod-my-resource binding timeout",)
    )


def test_a_claim_gone_from_the_store_fails() -> None:
    p = plugin()
    state = waiting_state(p)
    assert p.binding_ready(state, {}, NOW + 1, DEADLINE) == Status(
        Code.Error, ('could not find ResourceClaim "default/my-pod-my-resource"',)
    )
