"""What a preemption says to the world, shared by DefaultPreemption (which decides)
and the scheduling cycle (which publishes): upstream's words for the victims."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

PREEMPTED_REASON: Final = "Preempted"
"""The Event reason on each victim; its note is :func:`preempted_message`."""
PREEMPTING_ACTION: Final = "Preempting"
DISRUPTION_TARGET: Final = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
"""``v1.PodReasonPreemptionByScheduler``: the DisruptionTarget condition's reason."""


def preempted_message(preemptor_uid: str, node: str) -> str:
    """The ``Preempted`` Event's note on a victim."""
    return f"Preempted by pod {preemptor_uid} on node {node}"


def disruption_message(scheduler_name: str) -> str:
    """The DisruptionTarget condition's message on a victim."""
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"


WAITING_FOR_PREEMPTION: Final = "waiting for the preemption for this pod to be finished"
"""DefaultPreemption's PreEnqueue status while the pod's victims are not gone."""


class Preempting:
    """Preemptors whose victims are still there (upstream's ``IsPodRunningPreemption``),
    as the queue sees it: a preemption starts when the scheduler reports it and is over
    once every victim's ``DELETED`` (or terminating) event has arrived — or after
    ``patience`` seconds, when the victims do not go away and the pod may preempt again.
    DefaultPreemption's PreEnqueue keeps the preemptor out of activeQ meanwhile, so it
    is not retried against its own preemption.

    The queue keeps them in the store too (services.queue.preemptions), so that a queue
    restarted (or taking over) remembers them: :meth:`load` starts from what the store
    holds, :meth:`changed` says which preemptors' records to write since."""

    def __init__(self, patience: float = 300.0) -> None:
        self.patience = patience
        self._victims: dict[str, set[str]] = {}
        self._since: dict[str, float] = {}
        self._by_victim: dict[str, set[str]] = {}
        self._changed: set[str] = set()

    def __len__(self) -> int:
        return len(self._victims)

    def __contains__(self, preemptor: object) -> bool:
        return preemptor in self._victims

    def __iter__(self) -> Iterator[str]:
        """The preemptors with a preemption in flight."""
        return iter(list(self._victims))

    def start(self, preemptor: str, victims: Iterable[str], now: float) -> None:
        self.forget(preemptor)
        left = set(victims)
        if not left:
            return
        self._victims[preemptor] = left
        self._since[preemptor] = now
        self._changed.add(preemptor)
        for victim in left:
            self._by_victim.setdefault(victim, set()).add(preemptor)

    def gone(self, victim: str) -> list[str]:
        """A victim was deleted (or is terminating): the preemptors now done."""
        done = []
        for preemptor in self._by_victim.pop(victim, set()):
            left = self._victims.get(preemptor)
            if left is None:
                continue
            left.discard(victim)
            self._changed.add(preemptor)
            if not left:
                self.forget(preemptor)
                done.append(preemptor)
        return sorted(done)

    def forget(self, preemptor: str) -> None:
        for victim in self._victims.pop(preemptor, set()):
            owners = self._by_victim.get(victim)
            if owners is not None:
                owners.discard(preemptor)
                if not owners:
                    del self._by_victim[victim]
        if self._since.pop(preemptor, None) is not None:
            self._changed.add(preemptor)

    def running(self, preemptor: str, now: float) -> bool:
        since = self._since.get(preemptor)
        return since is not None and now - since < self.patience

    def expire(self, now: float) -> list[str]:
        """Forget the preemptions whose patience has passed at ``now``; the preemptors."""
        over = sorted(p for p, since in self._since.items() if now - since >= self.patience)
        for preemptor in over:
            self.forget(preemptor)
        return over

    def victims(self, preemptor: str) -> frozenset[str]:
        """The victims of ``preemptor`` that are not gone yet (none: no preemption)."""
        return frozenset(self._victims.get(preemptor, ()))

    def since(self, preemptor: str) -> float | None:
        return self._since.get(preemptor)

    def load(self, preemptions: Mapping[str, tuple[Iterable[str], float]]) -> None:
        """Start over from ``preemptions`` (preemptor → its victims left and when it
        started), as the store holds them; nothing counts as changed."""
        self._victims, self._since, self._by_victim = {}, {}, {}
        for preemptor, (victims, since) in preemptions.items():
            self.start(preemptor, victims, since)
        self._changed.clear()

    def changed(self) -> set[str]:
        """The preemptors whose record changed (started, a victim gone, over) since
        :meth:`written` was last told of them."""
        return set(self._changed)

    def written(self, preemptors: Iterable[str]) -> None:
        """These preemptors' records as they are now are in the store."""
        self._changed.difference_update(preemptors)
