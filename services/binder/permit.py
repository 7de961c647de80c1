"""PermitDecisions from outside (``ksched.permit``) that cannot apply: why, and the
ErrorReport the binder publishes on ``ksched.errors`` (``error.permit``)."""

from __future__ import annotations

import msgspec

from contracts import topology
from contracts.errors import ErrorReport
from contracts.permit import PermitDecision
from services.common.bus import Message
from services.common.store import WaitingRecord

PERMIT_ERROR_KIND = "permit"
"""``ksched.errors`` routing key word (``error.permit``) of a refused PermitDecision."""

_encoder = msgspec.json.Encoder()


def refusal(
    decision: PermitDecision, record: WaitingRecord | None, verdict: str
) -> tuple[str, str] | None:
    """(field, reason) when the decision cannot apply, else None."""
    pod = f"{decision.namespace}/{decision.name}"
    if verdict not in ("allow", "reject"):
        return "routingKey", f"expected allow.<namespace> or reject.<namespace>, got {verdict!r}"
    if record is None:
        return "name", f"pod {pod} is not waiting at Permit"
    if decision.uid and decision.uid != record.uid:
        return "uid", f"pod {pod} waiting at Permit has uid {record.uid}, not {decision.uid}"
    if decision.plugin not in record.pending:
        pending = ", ".join(sorted(record.pending)) or "none"
        return (
            "plugin",
            f"pod {pod} is not waiting at plugin {decision.plugin!r} (pending: {pending})",
        )
    return None


def error(decision: PermitDecision, routing_key: str, fieldname: str, reason: str) -> Message:
    report = ErrorReport(
        object_kind="PermitDecision",
        namespace=decision.namespace,
        name=decision.name,
        field=fieldname,
        reason=reason,
        routing_key=routing_key,
    )
    key = topology.error_key(PERMIT_ERROR_KIND)
    return Message(topology.ERRORS.name, key, _encoder.encode(report))
