"""Exponential backoff for restarting something that keeps failing: ``ksched up``
restarting a service process, a service retrying its broker at start-up.

Shaped like the kubelet's CrashLoopBackOff: the first retry waits ``initial``, each
failure doubles the wait up to ``cap``, and a run that lasted ``reset_after`` seconds
(the kubelet uses twice its cap) starts the count again::

    started() ──▶ running ──failed()──▶ wait the delay it returned ──▶ started() …
"""

from __future__ import annotations

from services.common.clock import Clock

INITIAL = 0.5
"""Seconds before the first retry."""
CAP = 30.0
"""Seconds; the delay never grows past this."""
RESET_AFTER = 2 * CAP
"""Seconds of running without failing after which the next failure waits ``INITIAL``
again (the kubelet resets CrashLoopBackOff after twice its maximum, too)."""


class Backoff:
    """The delay before each retry. Pure: time comes from ``clock``."""

    def __init__(
        self,
        clock: Clock,
        *,
        initial: float = INITIAL,
        cap: float = CAP,
        reset_after: float = RESET_AFTER,
    ) -> None:
        if not 0 < initial <= cap:
            raise ValueError(f"backoff: need 0 < initial ({initial}) <= cap ({cap})")
        self._clock = clock
        self._initial = initial
        self._cap = cap
        self._reset_after = reset_after
        self._next = initial
        self._since: float | None = None
        self.failures = 0
        """Failures since the last reset."""

    def started(self) -> None:
        """The thing (re)started now; a failure ``reset_after`` seconds from now or later
        counts as the first again."""
        self._since = self._clock.now()

    def failed(self) -> float:
        """It failed now: the seconds to wait before starting it again."""
        if self._since is not None and self._clock.now() - self._since >= self._reset_after:
            self._next, self.failures = self._initial, 0
        self._since = None
        delay = self._next
        self._next = min(self._cap, self._next * 2)
        self.failures += 1
        return delay
