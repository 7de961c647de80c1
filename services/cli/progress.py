"""When an embedded run is over: no pending pod can make progress any more.

In the embedded mode nothing outside the cluster file changes the cluster: after the
file is published, the only changes are the run's own bindings. A pending pod can make
progress only through a change it has not been attempted against yet, one its
rejecting plugins' queueing hints say may help it. The queue already applies those
hints: a pod they do not help stays in unschedulablePods. What still retries a pod
without any such change are the queue's timers: the end of a backoff (every error,
which no plugin is blamed for, goes to backoffQ whatever happened) and the
5-minute flush of unschedulablePods. With a FakeClock those fire as fast as
:meth:`EmbeddedCluster.settle` advances the clock, so a pod that can never fit would
be retried for ever.

:class:`Progress` tells which pods in backoffQ are worth advancing the clock for. It
is fed at each quiet point of the run (nothing in flight, nothing in activeQ, every
message handled) with the queue's pods and the cluster's last applied seq, and keeps,
for each pod, the seq of the quiet point before its last attempt: the attempt was
dispatched no earlier, so it saw every change up to that seq. A pod in backoffQ may
progress only if the cluster changed since then (for a pod no plugin rejected, the
hints take every change as one that may help; a pod some plugin rejected is only in
backoffQ because a change came, or because the flush moved it). And however many
changes come, a pod whose last :data:`MAX_SAME_FAILURES` attempts failed with the
same message is not waited for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from services.queue.types import QueueEntry, SubQueue

MAX_SAME_FAILURES: Final = 5
"""Attempts in a row failing with the same FailedScheduling message after which the
run no longer waits for a pod's backoff. Every retry in a row already needed a change
to the cluster since the previous attempt; five identical answers to five changes say
the changes are not the ones it waits for, and keep a large run (many bindings, each a
change) from retrying a hopeless pod once per binding."""


@dataclass(frozen=True, slots=True)
class _LastAttempt:
    attempts: int
    """The pod's attempt count when this record was made."""
    seen_seq: int
    """The cluster seq at the quiet point before that attempt: it saw at least this."""
    message: str
    same: int
    """Attempts in a row (seen at quiet points) that failed with ``message``."""


class Progress:
    def __init__(self, max_same_failures: int = MAX_SAME_FAILURES) -> None:
        self.max_same_failures = max_same_failures
        self._quiet_seq = 0
        self._last: dict[str, _LastAttempt] = {}

    def quiet(self, pods: Iterable[QueueEntry], seq: int) -> None:
        """A quiet point: every attempt so far has ended, ``seq`` is applied everywhere.
        Pods attempted since the previous quiet point get a new record."""
        last: dict[str, _LastAttempt] = {}
        for info in pods:
            if info.attempts == 0:
                continue
            record = self._last.get(info.uid)
            if record is None or record.attempts != info.attempts:
                same = record.same + 1 if record and record.message == info.message else 1
                record = _LastAttempt(info.attempts, self._quiet_seq, info.message, same)
            last[info.uid] = record
        self._last = last
        self._quiet_seq = seq

    def may_progress(self, info: QueueEntry) -> bool:
        """Whether another attempt of this pod could end otherwise than its last one:
        it is in activeQ or in flight, or in backoffQ with a change since its last
        attempt and fewer than ``max_same_failures`` identical failures in a row."""
        if info.where in (SubQueue.ACTIVE, SubQueue.IN_FLIGHT):
            return True
        if info.where is not SubQueue.BACKOFF:
            return False  # parked: only a change the hints accept moves it
        record = self._last.get(info.uid)
        if record is None or record.attempts != info.attempts:
            return True  # attempted since the last quiet point: not judged yet
        if record.same >= self.max_same_failures:
            return False
        return record.seen_seq < self._quiet_seq

    def any_may_progress(self, pods: Iterable[QueueEntry]) -> bool:
        return any(self.may_progress(info) for info in pods)
