"""Exponential backoff for restarting something that keeps failing: ``ksched up``
restarting a service process, a service retrying its broker at start-up.

Shaped like the kubelet's CrashLoopBackOff: the first retry waits ``initial``
(:class:`~services.common.settings.RestartSettings` gives the figures), each
failure doubles the wait up to ``cap``, and a run that lasted ``reset_after`` seconds
(the kubelet uses twice its cap) starts the count again::

    started() ──▶ running ──failed()──▶ wait the delay it returned ──▶ started() …
"""

from __future__ import annotations

from services.common.clock import Clock
from services.common.settings import RestartSettings


class Backoff:
    """The delay before each retry. Pure: time comes from ``clock``."""

    def __init__(self, clock: Clock, settings: RestartSettings | None = None) -> None:
        settings = settings or RestartSettings()
        self._clock = clock
        self._initial = settings.initial
        self._cap = settings.cap
        self._reset_after = settings.reset_after
        self._next = settings.initial
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
