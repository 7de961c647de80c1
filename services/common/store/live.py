"""Waiting for a lost store to come back: what every client of the store does on
StoreLost (see the marker's state machine in :mod:`services.common.store.base`)."""

from __future__ import annotations

import logging

from services.common.clock import Clock
from services.common.store.base import ClusterStore, Epoch, StoreLost

FIRST_WAIT = 0.1
MAX_WAIT = 5.0
"""Seconds between checks while the informer rebuilds the store (doubling up to this)."""


async def attach_when_live(
    store: ClusterStore, clock: Clock, log: logging.Logger, *, blank_ok: bool = False
) -> Epoch:
    """Attach to ``store`` once it is live, checking with backoff meanwhile (one WARNING
    when it has to wait, one INFO when it may go on). ``blank_ok``: a Blank store is
    returned as it is, unattached (a client that never attached cannot tell a fresh
    store from a lost one; the informer can, and rebuilds a lost one)."""
    wait, waited = FIRST_WAIT, 0.0
    while True:
        current = await store.epoch()
        if current.state == "blank" and blank_ok:
            return current
        if current.state == "live":
            try:
                attached = await store.attach()
            except StoreLost:
                pass  # lost again between the two calls
            else:
                if waited:
                    log.info(
                        "the store is live again (epoch %s, seq %d) after %.1f s",
                        attached.token,
                        attached.seq,
                        waited,
                    )
                return attached
        if not waited:
            log.warning(
                "the store is %s, not live: waiting for the informer to rebuild it "
                "from the event log before deciding anything",
                current.state,
            )
        await clock.sleep(wait)
        waited += wait
        wait = min(wait * 2, MAX_WAIT)
