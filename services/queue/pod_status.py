"""Why a pod is pending, from PreEnqueue too (KEP-5501, upstream's
``SchedulerPreEnqueuePodStatus`` feature gate, beta and on by default).

After PreEnqueue runs for a pod (``runPreEnqueuePlugins``), :meth:`PreEnqueueStatus.observe`
compares its outcome with ``last_pre_enqueue_rejection_message`` and keeps at most one
delayed patch of the pod's ``PodScheduled`` condition pending::

  first sight ─▶ last = the pod's NotReadyForScheduling / SchedulingGated message, or ""
  rejected with m ── m == last ──▶ nothing (never re-sent)
        │ m != last: last = m
        ├─ the pod already shows m ──▶ the pending patch is cancelled
        └─ else ─▶ pending "set m", due 5 s after the first change (a pending patch
                   keeps its due time and takes the new message: overwritten)
  passes ── last == "" ──▶ nothing
        │ last != "": last = ""
        ├─ the pod shows nothing ──▶ the pending patch is cancelled
        └─ else ─▶ pending "clear", due as above
  due (:meth:`due`, from the queue's timer tick) ─▶ published; the pod shows its target
  the pod leaves the queue (bound, deleted) ─▶ its pending patch is dropped (:meth:`forget`)

A patch that sets the condition goes with an Event of the same reason and message.

The SchedulingGates plugin's message is the API server's (``Scheduling is blocked due
to non-empty scheduling gates``), and a pod created with gates shows the API server's
``SchedulingGated`` condition with it: a gated pod is never patched, it keeps that
reason, as upstream's. A pod file without status stands for what the API server stores,
so a gated pod without a ``PodScheduled`` condition is taken to show that one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import msgspec

from contracts import topology
from contracts.k8s import Pod, PodCondition
from contracts.podstatus import (
    NOT_READY_FOR_SCHEDULING,
    POD_SCHEDULED,
    SCHEDULING_GATED,
    SCHEDULING_GATED_MESSAGE,
    PodStatusPatch,
)
from services.common.bus import Message
from services.common.decisions import ATTEMPT_HEADER, pod_event, rfc3339
from services.queue.types import Now, QueueEntry

DELAY: Final = 5.0
"""Seconds a PreEnqueue outcome must last before the pod's condition says it (upstream
hardcodes 5 s): transient rejections (a claim not yet seen) are not reported."""
_encoder = msgspec.json.Encoder()
_OURS: Final = frozenset({NOT_READY_FOR_SCHEDULING, SCHEDULING_GATED})
"""The reasons of PodScheduled conditions that say PreEnqueue holds the pod back."""


@dataclass(slots=True)
class PodStatusUpdate:
    """A patch of the pod's PodScheduled condition whose time has come."""

    pod: Pod
    plugin: str
    """The rejecting PreEnqueue plugin ("" on a clear)."""
    condition: PodCondition | None
    """The condition set; None on a clear."""
    cleared: PodCondition | None
    """On a clear: the condition removed."""
    attempts: int
    at: float


@dataclass(slots=True)
class _Pending:
    info: QueueEntry
    plugin: str
    message: str
    """The target: the message to set; "" clears."""
    due: float


def shown_condition(pod: Pod) -> PodCondition | None:
    """The pod's PodScheduled condition when it says PreEnqueue holds the pod back
    (reason NotReadyForScheduling or SchedulingGated); for a gated pod without any
    PodScheduled condition, the one the API server gives it."""
    for condition in pod.status.conditions:
        if condition.type == POD_SCHEDULED:
            return condition if condition.reason in _OURS else None
    if pod.spec.scheduling_gates:
        return PodCondition(
            type=POD_SCHEDULED,
            status="False",
            reason=SCHEDULING_GATED,
            message=SCHEDULING_GATED_MESSAGE,
        )
    return None


def _message(condition: PodCondition | None) -> str:
    return (condition.message or "") if condition is not None else ""


class PreEnqueueStatus:
    def __init__(self, clock: Now, *, enabled: bool = True, delay: float = DELAY) -> None:
        """``enabled``: the SchedulerPreEnqueuePodStatus gate; off, nothing is tracked."""
        self.clock = clock
        self.enabled = enabled
        self.delay = delay
        self._pending: dict[str, _Pending] = {}

    def __len__(self) -> int:
        """Patches pending."""
        return len(self._pending)

    def observe(self, info: QueueEntry) -> None:
        """PreEnqueue just ran for ``info``: gated (``gating_plugin``, ``message``) or
        passed."""
        if not self.enabled:
            return
        if info.last_pre_enqueue_rejection_message is None:
            info.pre_enqueue_condition = shown_condition(info.pod)
            info.last_pre_enqueue_rejection_message = _message(info.pre_enqueue_condition)
        target = info.message if info.gated else ""
        if info.gated and not target:
            return  # a rejection that says nothing changes nothing
        if target == info.last_pre_enqueue_rejection_message:
            return
        info.last_pre_enqueue_rejection_message = target
        uid = info.uid
        if target == _message(info.pre_enqueue_condition):
            self._pending.pop(uid, None)
            return
        pending = self._pending.get(uid)
        due = pending.due if pending is not None else self.clock.now() + self.delay
        self._pending[uid] = _Pending(info, info.gating_plugin if target else "", target, due)

    def forget(self, uid: str) -> None:
        """The pod left the queue: its pending patch is dropped."""
        self._pending.pop(uid, None)

    def next_due(self) -> float | None:
        return min((p.due for p in self._pending.values()), default=None)

    def due(self) -> list[PodStatusUpdate]:
        """The patches whose 5 s are over, oldest first; the pods now show them."""
        now = self.clock.now()
        ready = sorted((p for p in self._pending.values() if p.due <= now), key=lambda p: p.due)
        updates: list[PodStatusUpdate] = []
        for pending in ready:
            info = pending.info
            del self._pending[info.uid]
            shown = info.pre_enqueue_condition
            condition = None
            if pending.message:
                condition = PodCondition(
                    type=POD_SCHEDULED,
                    status="False",
                    reason=NOT_READY_FOR_SCHEDULING,
                    message=pending.message,
                    last_transition_time=rfc3339(now),
                )
            info.pre_enqueue_condition = condition
            cleared = None if condition is not None else shown
            updates.append(
                PodStatusUpdate(info.pod, pending.plugin, condition, cleared, info.attempts, now)
            )
        return updates


def status_messages(updates: Sequence[PodStatusUpdate]) -> list[Message]:
    """The messages of ``updates`` on ``ksched.decisions``: each a :class:`PodStatusPatch`
    (``status.<namespace>``), and for a condition set, its ``NotReadyForScheduling``
    Event (``event.<namespace>``, type Normal: the pod waits for something outside the
    scheduler, no attempt failed; FailedScheduling stays the Warning)."""
    messages: list[Message] = []
    for update in updates:
        meta = update.pod.metadata
        namespace = meta.namespace or "default"
        patch = PodStatusPatch(
            namespace=namespace,
            name=meta.name,
            uid=meta.uid,
            condition=update.condition,
            cleared=update.cleared,
            plugin=update.plugin,
            scheduler_name=update.pod.spec.scheduler_name,
        )
        key = topology.decision_key("status", namespace)
        messages.append(Message(topology.DECISIONS.name, key, _encoder.encode(patch)))
        if update.condition is None:
            continue
        event = pod_event(
            update.pod,
            reason=NOT_READY_FOR_SCHEDULING,
            message=update.condition.message or "",
            warning=False,
            action="Scheduling",
            attempt=update.attempts,
            now=update.at,
        )
        headers = {ATTEMPT_HEADER: str(update.attempts)}
        key = topology.decision_key("event", namespace)
        messages.append(Message(topology.DECISIONS.name, key, _encoder.encode(event), headers))
    return messages
