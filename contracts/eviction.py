"""Evictions decided by the descheduler (``ksched.decisions``, routing key
``eviction.<namespace>``): a ``policy/v1`` Eviction, as the descheduler would POST to the
pod's ``eviction`` subresource. A client carries it out (the API server's eviction, or
a DELETE honouring the grace period); the descheduler counts it as outstanding until
the pod's ``DELETED`` watch event arrives and never evicts the pod again meanwhile.

``metadata.annotations`` carry upstream's ``reason`` (``triggered by
<profile>/<plugin>: <reason>``) and ``requested-by`` (``sigs.k8s.io/descheduler``),
and ksched's ``descheduler.ksched.io/profile``, ``…/plugin`` and ``…/node``.
"""

from __future__ import annotations

from contracts.k8s.base import ObjectMeta, Wire

PROFILE_ANNOTATION = "descheduler.ksched.io/profile"
PLUGIN_ANNOTATION = "descheduler.ksched.io/plugin"
NODE_ANNOTATION = "descheduler.ksched.io/node"
REQUESTED_BY = "sigs.k8s.io/descheduler"


class Preconditions(Wire, kw_only=True, frozen=True):
    uid: str | None = None
    """The evicted pod's uid: a pod recreated under the same name is not evicted."""


class DeleteOptions(Wire, kw_only=True, frozen=True):
    grace_period_seconds: int | None = None
    """The policy's ``gracePeriodSeconds`` (absent: the pod's own)."""
    preconditions: Preconditions | None = None


class Eviction(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Eviction"):
    """``policy/v1`` Eviction: evict the pod named in ``metadata``."""

    api_version: str
    """Always ``policy/v1`` (written out: a default would be omitted on the wire)."""
    metadata: ObjectMeta = ObjectMeta()
    delete_options: DeleteOptions | None = None


__all__ = [
    "NODE_ANNOTATION",
    "PLUGIN_ANNOTATION",
    "PROFILE_ANNOTATION",
    "REQUESTED_BY",
    "DeleteOptions",
    "Eviction",
    "Preconditions",
]
