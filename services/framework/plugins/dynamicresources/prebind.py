"""DynamicResources' PreBind (in the binder): publish each claim not yet reserved for the
pod (``bindClaim``), then, with DRADeviceBindingConditions and
DRAResourceClaimDeviceStatus on and some allocated device carrying
``bindingConditions``, wait until the claims are ready for binding
(``isPodReadyForBinding``), at most ``bindingTimeout``.

The wait is the binder's (:mod:`services.framework.api.bindwait`): PreBind leaves the
claims and :func:`binding_wait` says what to wait for; the binder publishes the claims
first, then polls :func:`binding_ready` with the claims as the store holds them (their
``status.devices`` conditions come from the clients' MODIFIED events), and binds only
once every claim is ready. Upstream's messages: a binding failure condition True fails
with ``claim <name> binding failed: reason=…, message="…"``, a claim not ready past
its ``allocationTimestamp`` + ``bindingTimeout`` with ``claim <name> binding timeout``,
the wait itself running out with ``device binding timeout``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

import msgspec

from contracts.k8s import ResourceClaim, namespaced_name
from services.framework.api.bindwait import BindingWait
from services.framework.api.effects import ClaimStatusEffect
from services.framework.api.interface import CycleState
from services.framework.api.status import SUCCESS, Code, Status, StatusError
from services.framework.api.types import PodInfo
from services.framework.plugins.dynamicresources import binding, conditions
from services.framework.plugins.dynamicresources.args import binding_conditions_enabled
from services.framework.plugins.dynamicresources.claims import is_reserved_for_pod, not_found

PENDING_KEY: Final = "DynamicResources/pending"
"""Where the binder's CycleState holds the claims handed on (``restore_binding_state``)."""
WAIT_KEY: Final = "DynamicResources/wait"
"""The claims PreBind published, when their devices have binding conditions."""
MSG_TIMEOUT: Final = "device binding timeout"
EVENT_REASON: Final = "BindingConditionsPending"
WAITS_ON: Final = "resourceclaim"

_decoder = msgspec.json.Decoder(ResourceClaim)


def pre_bind(
    state: CycleState, pod: PodInfo, found: binding.PendingClaims, stamp: Callable[[], str] | None
) -> Status:
    """Leave a ClaimStatusEffect per claim not reserved for the pod yet; remember them
    when a device must wait for its binding conditions. A resumed state (``published``)
    has nothing left to do."""
    if found.published:
        return SUCCESS
    published: list[binding.PendingClaim] = []
    for item in found.claims:
        if is_reserved_for_pod(pod.pod, item.claim):
            continue
        claim = binding.reserved(item, pod.pod, stamp)
        state.effects.append(ClaimStatusEffect(claim))
        published.append(binding.PendingClaim(claim=claim))
    if binding_conditions_enabled() and any(has_binding_conditions(p.claim) for p in published):
        state.write(WAIT_KEY, binding.PendingClaims(claims=published, published=True))
    return SUCCESS


def has_binding_conditions(claim: ResourceClaim) -> bool:
    """``hasBindingConditions`` for one claim: an allocated device has some."""
    allocation = claim.status.allocation
    return allocation is not None and any(r.binding_conditions for r in allocation.devices.results)


def binding_wait(state: CycleState, node: str, timeout: float) -> BindingWait | None:
    try:
        waiting = state.read(WAIT_KEY, binding.PendingClaims)
    except StatusError:
        return None
    message = f"waiting for binding conditions for device on node {node}"
    return BindingWait(timeout, binding.encoder.encode(waiting), EVENT_REASON, message)


def binding_ready(
    resumed: CycleState, objects: Mapping[str, bytes], timeout: float, now: float, deadline: float
) -> Status | None:
    """``isPodReadyForBinding`` over the claims as stored, then the wait's deadline:
    Success once every claim is ready, an Error at a binding failure, at a claim's own
    timeout or at the deadline, None meanwhile."""
    status = _ready(resumed, objects, timeout, now)
    if status is None and now >= deadline:
        return Status(Code.Error, (MSG_TIMEOUT,))
    return status


def _ready(
    resumed: CycleState, objects: Mapping[str, bytes], timeout: float, now: float
) -> Status | None:
    try:
        waiting = resumed.read(PENDING_KEY, binding.PendingClaims)
    except StatusError:
        return SUCCESS
    for item in waiting.claims:
        meta = item.claim.metadata
        body = objects.get(namespaced_name(meta))
        if body is None:
            return Status(Code.Error, (not_found(meta.namespace, meta.name),))
        claim = _decoder.decode(body)
        try:
            ready = conditions.ready_for_binding(claim)
        except conditions.BindingFailed as failed:
            return Status(Code.Error, (str(failed),))
        if not ready:
            if conditions.binding_timed_out(claim, timeout, now):
                return Status(Code.Error, (f"claim {meta.name} binding timeout",))
            return None
    return SUCCESS
