"""The ksched replicas of the chaos run's HA mode: two of every service, on the HA
deployment's cluster (every broker listed), Sentinels and stream event log, with short
leases so that failovers are quick; and who leads each role (``ksched leases -o json``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ops.ha.services import READY, Leases
from services.cli.serviceflags import OWNERS
from tests.chaos.workload import NAMESPACE
from tests.integration.harness import Processes

SERVICES = ("informer", "queue", "scheduler", "binder", "descheduler")
ROLES = ("informer", "queue", "descheduler")
"""The single-writer roles, each behind a lease."""
LEASES = Leases(duration="4s", renew_deadline="3s", retry_period="1s")
LEASE_SECONDS = 4.0
LEASES_TIMEOUT = 30.0
POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: chaos
  pluginConfig:
  - name: RemovePodsHavingTooManyRestarts
    args:
      podRestartThreshold: 1000
  plugins:
    deschedule:
      enabled: [RemovePodsHavingTooManyRestarts]
"""
"""The descheduler's policy: it holds its lease and runs, and evicts nothing (the run
checks that no pod is lost)."""


class HAProcesses(Processes):
    """Replicas ``SERVICE-N`` (``informer-1``, ``informer-2``, …), each its own process."""

    def __init__(self, workdir: Path, amqp_url: str, redis_url: str) -> None:
        super().__init__(NAMESPACE, workdir, amqp_url=amqp_url, redis_url=redis_url)
        self.policy = workdir / "descheduler-policy.yaml"
        self.policy.write_text(POLICY)
        self.env = {
            "KSCHED_QUEUE_TYPE": "auto",
            "KSCHED_LEADER_ELECT_LEASE_DURATION": LEASES.duration,
            "KSCHED_LEADER_ELECT_RENEW_DEADLINE": LEASES.renew_deadline,
            "KSCHED_LEADER_ELECT_RETRY_PERIOD": LEASES.retry_period,
        }

    def flags(self) -> list[str]:
        flags = [
            "--amqp-url", self.amqp_url, "--redis-url", self.redis_url,
            "--namespace", self.namespace, "--event-log", "stream://", "--seed", "1",
            "--policy", str(self.policy), "--interval", "1h", "--dry-run",
        ]  # fmt: skip
        if "leader_elect_lease_duration" in OWNERS:  # the flags, where ksched has them
            flags += [
                f"--leader-elect-lease-duration={LEASES.duration}",
                f"--leader-elect-renew-deadline={LEASES.renew_deadline}",
                f"--leader-elect-retry-period={LEASES.retry_period}",
            ]
        return flags

    async def start_replica(self, key: str, within: float = 90.0) -> None:
        """Start replica ``key`` (``SERVICE-N``) and return once it runs, as the leader
        or a standby (bounded); AssertionError with its last lines if it exits first."""
        service = key.rsplit("-", 1)[0]
        extra = ["--replica", key] if service == "scheduler" else []
        await self.spawn(service, *extra, key=key, env=self.env)
        child = self.children[key]
        ready = asyncio.ensure_future(self.until(lambda: self._ready(key), within))
        exited = asyncio.ensure_future(child.wait())
        await asyncio.wait({ready, exited}, return_when=asyncio.FIRST_COMPLETED)
        exited.cancel()
        if not ready.done():
            ready.cancel()
            await asyncio.sleep(0.2)  # its last lines, still being read
        lines = self._current_log(key)
        tail = "\n".join(lines[-30:])
        if child.returncode is not None:
            last = lines[-1] if lines else "no output"
            raise AssertionError(
                f"{key} exited ({child.returncode}) while starting: {last}\n{tail}"
            )
        if ready.exception() is not None:
            raise AssertionError(f"{key} did not start within {within:g} s:\n{tail}")

    def last_words(self, key: str) -> str:
        """The last line replica ``key``'s last run wrote that is not DEBUG (why it
        exited, for the report: the run's directory may be gone when it is read)."""
        lines = [line for line in self._current_log(key) if " DEBUG " not in line]
        return lines[-1].strip()[:300] if lines else "no output"

    def lost_lease(self, key: str) -> bool:
        """Whether replica ``key``'s last run logged ``leaderelection lost``."""
        return any("leaderelection lost" in line for line in self._current_log(key))

    def _ready(self, key: str) -> bool:
        return any(mark in line for line in self._current_log(key) for mark in READY)

    async def start_all(self) -> None:
        """Two replicas of every service, the first of each first (so the leaders are
        the ``-1`` replicas unless a fault moved them)."""
        for replica in (1, 2):
            for service in SERVICES:
                await self.start_replica(f"{service}-{replica}")

    def exited(self) -> dict[str, int]:
        """Replica → exit code of every replica that exited (and forgets them)."""
        out = {k: c.returncode for k, c in self.children.items() if c.returncode is not None}
        for key in out:
            del self.children[key]
        return out

    def signal(self, key: str, signum: int) -> None:
        self.children[key].send_signal(signum)

    def key_of(self, pid: int) -> str | None:
        return next((k for k, c in self.children.items() if c.pid == pid), None)

    async def leases(self) -> list[dict[str, Any]]:
        """``ksched leases -o json`` for the run's namespace."""
        env = {**os.environ, "KSCHED_REDIS_URL": self.redis_url, "KSCHED_NAMESPACE": self.namespace}
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "services.cli.main", "leases", "-o", "json",
            "--namespace", self.namespace, "--redis-url", self.redis_url,
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            async with asyncio.timeout(LEASES_TIMEOUT):
                out, err = await child.communicate()
        except TimeoutError:
            child.kill()
            await child.wait()
            raise AssertionError(
                f"ksched leases did not answer within {LEASES_TIMEOUT:g} s"
            ) from None
        if child.returncode != 0:
            raise AssertionError(f"ksched leases failed: {err.decode().strip()[-500:]}")
        leases: list[dict[str, Any]] = json.loads(out)
        return leases

    async def holder(self, role: str) -> str | None:
        """The replica that holds ``role``'s lease now, unexpired; None when none does."""
        for lease in await self.leases():
            if lease.get("role") == role and not expired(lease):
                return self.key_of(int(lease.get("pid") or 0))
        return None

    async def leader(self, role: str, within: float = 60.0) -> str:
        """The replica leading ``role``, waiting (bounded) until one does."""
        deadline = time.monotonic() + within
        while (key := await self.holder(role)) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"no replica of ours holds the {role} lease")
            await asyncio.sleep(0.5)
        return key

    async def new_leader(self, role: str, old: str, within: float) -> str:
        """The replica that took ``role``'s lease over from ``old`` (bounded)."""
        deadline = time.monotonic() + within
        while (key := await self.holder(role)) in (None, old):
            if time.monotonic() > deadline:
                raise AssertionError(f"no new {role} leader within {within:g} s of {old}")
            await asyncio.sleep(0.2)
        assert key is not None
        return key


def expired(lease: dict[str, Any], now: float | None = None) -> bool:
    """Whether the lease's ``expires_at`` (epoch seconds, or an ISO 8601 time) passed."""
    expires = lease.get("expires_at")
    if expires is None:
        return True
    if isinstance(expires, str):
        try:
            expires = datetime.fromisoformat(expires.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return False
    return float(expires) < (time.time() if now is None else now)
