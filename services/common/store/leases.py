"""Leader leases and fencing (one per single-writer role: the informer, the queue, the
descheduler; :mod:`services.common.leaderelection` holds them). Each new term of a
role's lease gets a fencing token above the last: one more, or the candidate's clock
in milliseconds when that is higher. A client that leads calls
``ClusterStore.fence``; from then on every call it makes that writes (and every
guarded read) carries the token and is refused with :class:`FencedError`, in the same
atomic step, once the role's lease has another token: a leader deposed while it was
paused (SIGSTOP, a long GC, a partition) cannot write when it wakes up::

        acquire (token: first_token(now))        renew (same token)
    (none) ──────────────────────────▶ Held(holder, token) ◀───────┐
       ▲                                  │   │  └─────────────────┘
       │ store lost                       │   │ renewed + duration ≤ now of a
       │ (the holder's next renewal       │   │ candidate: it takes a new term
       │  writes it back, same token)     │   ▼ (max(token + 1, clock), transitions + 1)
       └──────────────────────────────────┤  Held(candidate, next token)
                                          │ release (holder, token)
                                          ▼
                                    Released(token): the next acquire takes a new
                                    term at once

A lease's first term (none recorded: a fresh store, or one that lost its leases)
starts at the caller's clock in milliseconds (:func:`first_token`), so tokens keep
growing across a store loss: a deposed writer's token is never taken for a new one
(the event log's claim refuses a lower token than it has seen). Every later term takes
the clock too when it is ahead, so a term whose write a Redis failover lost (the
promoted replica never had it) is not handed out again to another holder. Expiry compares the
candidate's clock with the holder's renew time (as assumption deadlines compare
replicas' clocks): hosts' clocks must agree to well within a lease duration. Leader
leases are not guarded by the epoch: they outlive a store loss, or come back with
their holder's next renewal.
"""

from __future__ import annotations

from dataclasses import dataclass


def first_token(now: float) -> int:
    """The fencing token of a lease's first term acquired at ``now`` (clock seconds):
    later terms count up from it (see the module docstring)."""
    return max(1, int(now * 1000))


class Deposed(ConnectionError):
    """This instance no longer leads its role (its lease has another term): it must stop
    writing. A ConnectionError, so that a consumer's batch that raises it goes back to
    the queue for the leader (the bus retries what a dependency's absence failed),
    never to the dead letters."""


class FencedError(Deposed):
    """The role's lease has another fencing token than the one this client writes with
    (``ClusterStore.fence``): another instance took the lease over. Nothing was
    changed. The caller has been deposed: it must not retry, acknowledge what it was
    recording, or write anything else; it stops (the process exits non-zero, as
    kube-scheduler's ``leaderelection lost``)."""

    def __init__(self, role: str, token: int, current: int) -> None:
        super().__init__(
            f"the {role} lease has fencing token {current}, this client's is {token}: "
            "another instance took the lease over"
        )
        self.role = role
        self.token = token
        self.current = current


@dataclass(frozen=True, slots=True)
class Fence:
    """The role and fencing token a leading client's calls carry."""

    role: str
    token: int


@dataclass(frozen=True, slots=True)
class LeaderLease:
    """One role's leader lease, shaped like a ``coordination.k8s.io/v1`` Lease's spec,
    plus the fencing token of the current term."""

    name: str
    holder: str
    """``holderIdentity``; empty once the holder released the lease."""
    token: int
    """The fencing token of the current term (one above the term before)."""
    duration: float
    """``leaseDurationSeconds``: how long after ``renewed`` candidates wait before they
    may take the lease over."""
    acquired: float
    """``acquireTime``: clock seconds (the holder's clock) when this term began."""
    renewed: float
    """``renewTime``: clock seconds (the holder's clock) of the last renewal."""
    transitions: int
    """``leaseTransitions``: how many times the lease changed hands."""
    host: str = ""
    """The host name of the holder's process (for people: ``ksched leases``)."""
    pid: int = 0
    """The holder's process id on ``host``."""

    def expired(self, now: float) -> bool:
        """True once candidates may take the lease over at ``now`` (released, or not
        renewed within its duration)."""
        return not self.holder or self.renewed + self.duration <= now
