"""Preemption decisions (``ksched.decisions``), what a client needs to carry them out.

- ``preemption.<namespace>`` (the preemptor's namespace): a :class:`Preemption` —
  the preemptor, the node it is nominated to, and the victims to delete, each with the
  ``DisruptionTarget`` condition (reason ``PreemptionByScheduler``) a client sets on it
  before deleting it, as kube-scheduler does. ksched removes nothing itself: the
  victims go away when their ``DELETED`` watch events arrive, and the preemptor is then
  scheduled on its nominated node.
- ``nomination.<namespace>``: a v1 Pod carrying only its identity and
  ``status.nominatedNodeName`` (empty: the nomination was cleared), the status update
  kube-scheduler would write for the preemptor and for lower-priority pods nominated
  to the same node.
"""

from __future__ import annotations

from contracts.k8s.base import Wire
from contracts.k8s.pod import PodCondition


class PodRef(Wire, kw_only=True, frozen=True):
    namespace: str
    name: str
    uid: str


class PreemptionVictim(PodRef, kw_only=True, frozen=True):
    condition: PodCondition
    """The ``DisruptionTarget`` condition to set on the victim before deleting it."""


class Preemption(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Preemption"):
    """A preemption decided by the scheduler (``preemption.<namespace>``)."""

    preemptor: PodRef
    nominated_node: str
    victims: list[PreemptionVictim]
    """Most important first, as upstream orders them."""
    scheduler_name: str
    attempt: int
    """The preemptor's scheduling attempt that decided it."""


__all__ = ["PodRef", "Preemption", "PreemptionVictim"]
