"""Leader election of the single-writer roles (the informer, the queue, the descheduler),
as client-go's ``tools/leaderelection`` runs it for kube-scheduler, over the store's
leader leases (:meth:`~services.common.store.base.ClusterStore.acquire_lease`).

::

    standby ──acquire (every retry period, jittered)──▶ leading(token)
      ▲  the lease is another's, not expired               │ renew every retry period
      └───────────────────────────────────────────────     │
                                                           ▼
                        stopped ◀── not renewed within the renew deadline, another
                        leading    holds the lease, or a fenced write was refused
                                   (OnStoppedLeading: the process exits non-zero)

- A standby tries to acquire the lease every retry period (client-go's ``JitterUntil``:
  up to 2.2 times it), and takes it over once the holder has not renewed it for a lease
  duration (or released it): within a lease duration and a retry period or two of the
  leader dying.
- The leader renews every retry period; a renewal that fails is tried again until the
  renew deadline (counted from the last renewal) has passed, then it stops leading.
  The renew deadline is shorter than the lease duration, so it stops before anyone may
  take over. A renewal the store refuses (another term began) stops it at once, and so
  does a write of its own the store refused for its token (:meth:`LeaderElector.deposed`).
- Each term has a fencing token (:class:`~services.common.store.base.Fence`): every
  write the leader makes carries it, and the store refuses it once another term began.
  That, not the timing, is what keeps a leader that was paused past its lease (SIGSTOP,
  a long GC) from writing over its successor; client-go itself does not fence.
- :meth:`LeaderElector.release` gives the lease up (client-go's ``ReleaseOnCancel``):
  call it only once the service has stopped, so nothing is written after it.

``leader_election_master_status{name}`` (1 while leading) is upstream's gauge.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Gauge

from services.common.clock import Clock
from services.common.proxy import AsyncMethods
from services.common.settings import LEADER_ELECTED as ROLES
from services.common.settings import LeaderElectionSettings
from services.common.store import ClusterStore, Deposed, FencedError, LeaderLease

log = logging.getLogger("ksched.leaderelection")

JITTER_FACTOR = 1.2
"""client-go's ``JitterFactor``: a standby waits a retry period times 1 to 2.2."""

T = TypeVar("T")


def default_identity() -> str:
    """``hostname_uuid``, as client-go's callers make it: unique per process."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def master_status(registry: CollectorRegistry) -> Gauge:
    """``leader_election_master_status{name}``: 1 while this instance leads, else 0."""
    return Gauge(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
        "backup, 1 indicates master. 'name' is the string used to identify the lease.",
        ["name"],
        registry=registry,
    )


class LeaderElector:
    """One instance's candidacy for the lease ``name``. :meth:`run` returns once this
    instance stopped leading (or never will: cancel it); the callbacks are client-go's,
    called synchronously:

    - ``on_started_leading(token)``: it leads now, with this fencing token;
    - ``on_stopped_leading()``: it led, and stopped (never called after :meth:`release`);
    - ``on_new_leader(identity)``: another holder was observed than the one before."""

    def __init__(
        self,
        store: ClusterStore,
        clock: Clock,
        name: str,
        settings: LeaderElectionSettings,
        *,
        on_started_leading: Callable[[int], None],
        on_stopped_leading: Callable[[], None],
        on_new_leader: Callable[[str], None] | None = None,
        registry: CollectorRegistry | None = None,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._store = store
        self._clock = clock
        self.name = name
        self.settings = settings
        self.identity = settings.identity or default_identity()
        self._started = on_started_leading
        self._stopped = on_stopped_leading
        self._new_leader = on_new_leader
        self._jitter = jitter
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self._status = master_status(self.registry).labels(name)
        self._status.set(0)
        self.token = 0
        """The fencing token of the term this instance leads (0: it does not lead)."""
        self.leader = ""
        """The holder last observed (client-go's ``GetLeader``)."""
        self.reason = ""
        """Why it stopped leading (empty while it leads, or never led)."""
        self._renewed = 0.0
        self._deposed = asyncio.Event()
        self._host, self._pid = socket.gethostname(), os.getpid()

    @property
    def leading(self) -> bool:
        return self.token != 0

    async def run(self, *, once: bool = False) -> None:
        """Acquire the lease (standing by meanwhile), then renew it until that fails.
        ``once``: return at once, not leading, if the first try is refused (a one-shot
        run that must not wait)."""
        self.token = await self._acquire(once)
        if not self.token:
            return
        self._status.set(1)
        log.info("became the %s leader (token %d)", self.name, self.token)
        self._started(self.token)
        # Cancelled (the process is stopping): it still holds the lease, unrenewed,
        # until release() once its service has stopped.
        self.reason = await self._renew()
        self.token = 0
        self._status.set(0)
        self._stopped()

    def deposed(self, error: Deposed) -> None:
        """A write of this leader's was refused for its token: it stops leading now."""
        if self.token and not self._deposed.is_set():
            self.reason = f"a store write was refused: {error}"
            self._deposed.set()

    async def confirm(self) -> None:
        """Renew now, or raise Deposed (and stop leading): for a write that must
        not happen unless this instance still leads, when nothing else it writes would
        carry its token (the informer acknowledging a batch that appends nothing)."""
        now = self._clock.now()
        error: Deposed
        if not self.token or now - self._renewed >= self.settings.renew_deadline:
            error = Deposed(f"the {self.name} lease was not renewed within the renew deadline")
        else:
            granted, lease = await self._try(now, self.token, self.settings.renew_deadline)
            if granted:
                self._renewed = now
                return
            error = FencedError(self.name, self.token, lease.token)
        self.deposed(error)
        raise error

    async def release(self) -> None:
        """Give the lease up if this instance leads (after its service stopped): a
        standby takes it over at its next try instead of a lease duration later."""
        token, self.token = self.token, 0
        self._status.set(0)
        if token:
            released = await self._store.release_lease(
                self.name, self.identity, token, self._clock.now()
            )
            if released:
                log.info("released lease %s", self.name)

    async def _acquire(self, once: bool) -> int:
        """client-go's ``acquire``: try every retry period (jittered) until granted
        (``once``: 0 if the first try is refused); the token."""
        retry = self.settings.retry_period
        log.info("attempting to acquire leader lease %s...", self.name)
        failing = False
        while True:
            now = self._clock.now()
            try:
                granted, lease = await self._try(now, 0, retry)
            except Exception as error:
                if not failing:
                    log.warning("could not acquire lease %s: %s", self.name, _said(error))
                failing = True
            else:
                failing = False
                self._observe(lease)
                if granted:
                    self._renewed = now
                    return lease.token
                if once:
                    return 0
            await self._clock.sleep(retry * (1 + JITTER_FACTOR * self._jitter()))

    async def _renew(self) -> str:
        """client-go's ``renew``: every retry period, retried until the renew deadline
        has passed since the last renewal; returns why it stopped."""
        retry, deadline = self.settings.retry_period, self.settings.renew_deadline
        while True:
            if await self._sleep_unless_deposed(retry):
                return self.reason
            while True:
                now = self._clock.now()
                left = self._renewed + deadline - now
                if left <= 0:
                    return f"failed to renew lease {self.name}: timed out waiting for the condition"
                try:
                    granted, lease = await self._try(now, self.token, left)
                except Exception as error:
                    log.warning("could not renew lease %s: %s", self.name, _said(error))
                else:
                    if granted:
                        self._renewed = now
                        break
                    self._observe(lease)
                    return (
                        f"the lease {self.name} is held by {lease.holder or 'no one'} "
                        f"(fencing token {lease.token}) now"
                    )
                if await self._sleep_unless_deposed(min(retry, max(left, 0.0))):
                    return self.reason

    async def _try(self, now: float, token: int, within: float) -> tuple[bool, LeaderLease]:
        """One ``acquire_lease`` (``token``: renew that term), bounded by ``within``."""
        return await self._within(
            within,
            self._store.acquire_lease(
                self.name,
                self.identity,
                self.settings.lease_duration,
                now,
                token=token,
                host=self._host,
                pid=self._pid,
            ),
        )

    def _observe(self, lease: LeaderLease) -> None:
        """client-go's ``maybeReportTransition``."""
        if lease.holder == self.leader:
            return
        self.leader = lease.holder
        if lease.holder and lease.holder != self.identity:
            log.info("waiting for the %s lease (held by %s)", self.name, lease.holder)
        if self._new_leader is not None:
            self._new_leader(lease.holder)

    async def _sleep_unless_deposed(self, seconds: float) -> bool:
        """Sleep ``seconds`` of the clock; True (at once) if deposed meanwhile."""
        if self._deposed.is_set():
            return True
        sleep = asyncio.ensure_future(self._clock.sleep(seconds))
        deposed = asyncio.ensure_future(self._deposed.wait())
        try:
            await asyncio.wait([sleep, deposed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleep, deposed):
                task.cancel()
            await asyncio.gather(sleep, deposed, return_exceptions=True)
        return self._deposed.is_set()

    async def _within(self, seconds: float, call: Awaitable[T]) -> T:
        """``call``'s result, or TimeoutError once ``seconds`` of the clock passed (a
        store that does not answer must not hold the leader past its renew deadline)."""
        task: asyncio.Future[T] = asyncio.ensure_future(call)
        timer = asyncio.ensure_future(self._clock.sleep(seconds))
        waits: list[asyncio.Future[Any]] = [task, timer]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise TimeoutError(f"the store did not answer within {seconds:g} s")
        return task.result()


def _said(error: BaseException) -> str:
    return str(error) or type(error).__name__


class DeposingStore(AsyncMethods):
    """``inner`` (a fenced ClusterStore) that tells ``elector`` at once when the store
    refuses one of its writes for its token, so the leader stops before its next
    renewal would have told it."""

    def __init__(self, inner: Any, elector: LeaderElector) -> None:
        super().__init__(inner)
        self._elector = elector

    def wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return await method(*args, **kwargs)
            except FencedError as error:
                self._elector.deposed(error)
                raise

        return call


__all__ = [
    "JITTER_FACTOR",
    "ROLES",
    "DeposingStore",
    "LeaderElector",
    "default_identity",
    "master_status",
]
