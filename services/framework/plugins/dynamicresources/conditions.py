"""Device binding conditions (DRADeviceBindingConditions): an allocated claim whose
devices wait for their driver to report them ready (``status.devices[].conditions``).

Filter calls such a claim unavailable once a binding failure condition is True, or
once it has waited longer than ``bindingTimeout`` since its ``allocationTimestamp``;
PostFilter may then free it so that other devices can be tried.
"""

from __future__ import annotations

from contracts.k8s.resource import ResourceClaim
from services.common.k8s.timestamps import parse_time


class BindingFailed(Exception):
    """A binding failure condition is True (upstream's message)."""


def ready_for_binding(claim: ResourceClaim) -> bool:
    """``isClaimReadyForBinding``: every binding condition of every device is True
    (so also when there are none); raises :class:`BindingFailed` when a binding
    failure condition is True."""
    allocation = claim.status.allocation
    if allocation is None:
        return False
    for result in allocation.devices.results:
        if not result.binding_conditions:
            continue
        device = next(
            (
                d
                for d in claim.status.devices
                if (d.driver, d.pool, d.device) == (result.driver, result.pool, result.device)
            ),
            None,
        )
        if device is None:
            return False
        conditions = {c.get("type"): c for c in device.conditions}
        for name in result.binding_failure_conditions:
            failed = conditions.get(name)
            if failed is not None and failed.get("status") == "True":
                raise BindingFailed(
                    f"claim {claim.metadata.name} binding failed: "
                    f"reason={failed.get('reason', '')}, "
                    f'message="{failed.get("message", "")}"'
                )
        for name in result.binding_conditions:
            met = conditions.get(name)
            if met is None or met.get("status") != "True":
                return False
    return True


def binding_timed_out(claim: ResourceClaim, timeout: float, now: float) -> bool:
    """``isClaimTimeout``: some device has binding conditions and the allocation is
    older than ``timeout`` seconds."""
    allocation = claim.status.allocation
    if allocation is None or allocation.allocation_timestamp is None:
        return False
    allocated_at = parse_time(allocation.allocation_timestamp)
    if allocated_at is None or allocated_at + timeout >= now:
        return False
    return any(result.binding_conditions for result in allocation.devices.results)


def unready(claim: ResourceClaim, timeout: float, now: float) -> bool:
    """Failed, or not ready and timed out: unavailable on every node."""
    try:
        ready = ready_for_binding(claim)
    except BindingFailed:
        return True
    return not ready and binding_timed_out(claim, timeout, now)
