"""Permit from outside, and the waiting pods announced to users.

- ``ksched.permit`` (topic) takes a :class:`PermitDecision` with routing key
  ``allow.<namespace>`` or ``reject.<namespace>``: allow (or reject) the waiting pod
  ``namespace/name`` (``uid`` optional, to be sure it is the same pod) at ``plugin``
  (``ExternalPermit`` for the built-in plugin that waits for such approvals). A
  decision for a pod that is not waiting at that plugin goes to ``ksched.errors``.
- ``ksched.decisions`` carries a :class:`WaitingPod` with routing key
  ``waiting.<namespace>`` each time a pod starts waiting at Permit, with its pending
  plugins and their deadlines.
"""

from __future__ import annotations

from typing import Literal

from contracts.k8s.base import Wire

PermitVerdict = Literal["allow", "reject"]


class PermitDecision(Wire, kw_only=True, frozen=True):
    """An approval (``allow.<namespace>``) or a refusal (``reject.<namespace>``) of a
    pod waiting at Permit, for one plugin."""

    namespace: str
    name: str
    plugin: str
    uid: str | None = None
    """When set, the waiting pod must be this one (not a namesake recreated since)."""
    message: str | None = None
    """For a reject: why (the pod's FailedScheduling message quotes it)."""


class PendingPlugin(Wire, kw_only=True, frozen=True):
    name: str
    deadline: str
    """When this plugin's wait times out: RFC 3339, UTC (``2026-11-24T10:00:00.5Z``)."""


class WaitingPod(Wire, kw_only=True, frozen=True, tag_field="kind", tag="WaitingPod"):
    """A pod that started waiting at Permit on ``node`` (``waiting.<namespace>``)."""

    namespace: str
    name: str
    uid: str
    node: str
    pending_plugins: list[PendingPlugin]


def permit_key(verdict: PermitVerdict, namespace: str | None) -> str:
    """Routing key of a permit decision: ``allow.default``, ``reject.team-a``."""
    return f"{verdict}.{namespace or 'default'}"
