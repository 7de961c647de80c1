"""The in-memory store's leader leases and fence (:mod:`services.common.store.leases`),
as one piece of :class:`~services.common.store.memory.MemoryStore`: every method runs
without awaiting, so each is one atomic step for the tasks of its loop."""

from __future__ import annotations

import abc
from dataclasses import replace

from services.common.store.leases import Fence, FencedError, LeaderLease, first_token


class LeaderLeases(abc.ABC):
    """The leases of one MemoryStore's data (``_leaders``, shared by its clients), and
    this client's fence."""

    _fence: Fence | None

    @property
    @abc.abstractmethod
    def _leaders(self) -> dict[str, LeaderLease]:
        """Every role's lease, by name: the store's data (a flush replaces it)."""

    def fence(self, fence: Fence | None) -> None:
        self._fence = fence

    def _fenced(self) -> None:
        """FencedError when this client's fence is not its role's current term."""
        if self._fence is None:
            return
        lease = self._leaders.get(self._fence.role)
        if lease is not None and lease.token != self._fence.token:
            raise FencedError(self._fence.role, self._fence.token, lease.token)

    async def acquire_lease(
        self,
        name: str,
        holder: str,
        duration: float,
        now: float,
        *,
        token: int = 0,
        host: str = "",
        pid: int = 0,
    ) -> tuple[bool, LeaderLease]:
        current = self._leaders.get(name)
        if current is None:  # never held, or the store lost it: a renewal writes it back
            first = token or first_token(now)
            lease = LeaderLease(name, holder, first, duration, now, now, 0, host, pid)
        elif token:
            if (current.holder, current.token) != (holder, token):
                return False, current
            lease = replace(current, duration=duration, renewed=now)
        elif current.holder == holder or current.expired(now):
            moved = current.holder != holder
            transitions = current.transitions + moved
            next_token = max(current.token + 1, first_token(now))  # see _lua_leases
            lease = LeaderLease(
                name, holder, next_token, duration, now, now, transitions, host, pid
            )
        else:
            return False, current
        self._leaders[name] = lease
        return True, lease

    async def release_lease(self, name: str, holder: str, token: int, now: float) -> bool:
        current = self._leaders.get(name)
        if current is None or (current.holder, current.token) != (holder, token):
            return False
        self._leaders[name] = replace(current, holder="", renewed=now)
        return True

    async def leader_leases(self) -> dict[str, LeaderLease]:
        return dict(self._leaders)
