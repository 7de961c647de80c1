"""Rejected input, published on ``ksched.errors`` with routing key ``error.<kind>``."""

from __future__ import annotations

from contracts.k8s import Wire


class ErrorReport(Wire, kw_only=True, frozen=True, tag_field="kind", tag="ErrorReport"):
    """Why an inbound message was refused. Names the object and the field."""

    object_kind: str
    """The kind from the routing key or the object (``unknown`` if neither says)."""
    namespace: str | None = None
    name: str | None = None
    field: str
    """JSON path of the offending field (``spec.containers[0].resources.requests.cpu``)."""
    reason: str
    routing_key: str = ""
    excerpt: str = ""
    """The first bytes of the message body, to find it in a producer's logs."""
