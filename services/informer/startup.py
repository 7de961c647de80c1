"""The informer's start, patient with its dependencies: a new leader's first steps (the
event log's broker and where it ends, the queues, the store caught up) meet the faults
that made it the leader. A stream whose node was just restarted has no replica on it
yet, a quorum queue may be electing its leader, Redis may be failing over: such a step
is retried with backoff instead of ending the process, which would leave the role
without a leader until a supervisor restarts it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from services.common.bus.base import unavailable
from services.common.clock import Clock
from services.common.redact import redact
from services.common.store import Deposed

log = logging.getLogger("ksched.informer")

PATIENCE = 60.0
"""Seconds a start step is retried while a dependency is unavailable; then it raises."""
FIRST_DELAY, MAX_DELAY = 0.5, 5.0
"""Seconds between tries: the first, doubling up to the second."""


async def until_available(clock: Clock, *steps: Callable[[], Awaitable[object]]) -> None:
    """Run ``steps`` in order, each retried while it fails for want of a dependency
    (:func:`services.common.bus.base.unavailable`), for up to :data:`PATIENCE` seconds in
    all. Any other failure, and :class:`Deposed` (another leader took over: retrying
    cannot help), is raised at once."""
    give_up = clock.now() + PATIENCE
    delay = FIRST_DELAY
    for step in steps:
        while True:
            try:
                await step()
                break
            except Exception as error:
                if isinstance(error, Deposed) or not unavailable(error):
                    raise
                if clock.now() + delay > give_up:
                    raise
                log.warning(
                    "informer start: %s; retrying in %g s", redact(str(error) or repr(error)), delay
                )
                await clock.sleep(delay)
                delay = min(delay * 2, MAX_DELAY)
