"""Redis with one replica and three Sentinels on one machine, for the HA deployment.

``start(workdir, base_port, password=None)`` runs the master on ``base_port``, its
replica on ``base_port + 1`` and three Sentinels on ``base_port + 2 .. + 4``, each a
process of its own with its files under ``workdir``; it returns once the replica has
synced and every Sentinel sees the master, the replica and the other two Sentinels
(bounded). The Sentinels watch the master as ``ksched`` with a quorum of 2 and call it
down after 2 s. :attr:`SentinelDeployment.url` is the ``redis+sentinel://`` URL that
KSCHED_REDIS_URL takes.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ops.ha.processes import Child, HAError

SERVICE = "ksched"
"""The master's name at the Sentinels."""
QUORUM = 2
DOWN_AFTER_MS = 2000
FAILOVER_TIMEOUT_MS = 10000
SETTLE_TIMEOUT = 60.0
PORTS = 5
"""Ports taken from the base: master, replica, three Sentinels."""
REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")


def available() -> str | None:
    """Why Redis with Sentinel cannot be started here, or None when it can."""
    for name, binary in (("redis-server", REDIS_SERVER), ("redis-cli", REDIS_CLI)):
        if binary is None:
            return f"{name} is not installed"
    return None


@dataclass
class SentinelDeployment:
    workdir: Path
    base_port: int
    password: str | None
    servers: dict[int, Child] = field(default_factory=dict)
    """Port → the redis-server (master or replica) on it."""
    sentinels: dict[int, Child] = field(default_factory=dict)

    @property
    def sentinel_ports(self) -> list[int]:
        return list(self.sentinels)

    @property
    def master_port(self) -> int:
        """The port of the master the Sentinels name now."""
        answer = self.sentinel_cli("SENTINEL", "get-master-addr-by-name", SERVICE).split()
        if len(answer) != 2:
            raise HAError(f"no Sentinel names a master for {SERVICE}")
        return int(answer[1])

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{auth}{hosts}/{SERVICE}/0"

    def cli(self, port: int, *args: str, timeout: float = 10.0) -> str:
        """``redis-cli -p PORT ARGS`` (authenticated for a data server): its output."""
        command = [_need(REDIS_CLI), "-h", "127.0.0.1", "-p", str(port)]
        env = None
        if self.password and port in self.servers:
            env = {"REDISCLI_AUTH": self.password, "PATH": "/usr/bin:/bin"}
        try:
            done = subprocess.run(
                [*command, *args], env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise HAError(f"redis-cli {args[0]} on port {port}: no answer") from None
        return done.stdout.strip()

    def sentinel_cli(self, *args: str) -> str:
        """Ask the first Sentinel that answers."""
        for port, child in self.sentinels.items():
            if child.running:
                answer = self.cli(port, *args)
                if answer:
                    return answer
        raise HAError("no Sentinel answers")

    def start_server(self, port: int, replica_of: int | None = None) -> None:
        """Start (again) the redis-server of ``port``, a replica of ``replica_of`` or, by
        default, of the master the Sentinels name (a master when they name none or this
        one). It keeps nothing on disk: a restarted server comes back empty and syncs."""
        child = self.servers[port]
        if "--replicaof" in child.command:
            child.command = child.command[: child.command.index("--replicaof")]
        master = replica_of or self._current_master()
        if master is not None and master != port:
            child.command = [*child.command, "--replicaof", "127.0.0.1", str(master)]
        child.start()
        child.wait_ready("Ready to accept connections")

    def _current_master(self) -> int | None:
        """The master's port as the Sentinels name it; None before they run."""
        try:
            return self.master_port
        except HAError:
            return None

    def stop(self) -> None:
        for child in [*self.sentinels.values(), *self.servers.values()]:
            child.stop()


def start(workdir: Path, base_port: int, password: str | None = None) -> SentinelDeployment:
    """Start master, replica and Sentinels; return once the Sentinels agree (bounded)."""
    workdir.mkdir(parents=True, exist_ok=True)
    handle = SentinelDeployment(workdir, base_port, password)
    master, replica = base_port, base_port + 1
    for port in (master, replica):
        command = [
            _need(REDIS_SERVER), "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(workdir),
            "--dbfilename", f"dump-{port}.rdb", "--logfile", "",
        ]  # fmt: skip
        if password:
            command += ["--requirepass", password, "--masterauth", password]
        handle.servers[port] = Child(f"redis-{port}", command, {}, workdir / f"redis-{port}.log")
    for port in range(base_port + 2, base_port + PORTS):
        config = workdir / f"sentinel-{port}.conf"
        lines = [
            f"port {port}", "bind 127.0.0.1", f"dir {workdir}",
            f"sentinel monitor {SERVICE} 127.0.0.1 {master} {QUORUM}",
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {SERVICE} 1",
        ]  # fmt: skip
        if password:
            lines.append(f"sentinel auth-pass {SERVICE} {password}")
        config.write_text("\n".join(lines) + "\n")
        command = [_need(REDIS_SERVER), str(config), "--sentinel"]
        handle.sentinels[port] = Child(
            f"sentinel-{port}", command, {}, workdir / f"sentinel-{port}.log"
        )
    try:
        handle.start_server(master)
        handle.start_server(replica, replica_of=master)
        for child in handle.sentinels.values():
            child.start()
            child.wait_ready("Sentinel ID is")
        _settle(handle)
    except BaseException:
        handle.stop()
        raise
    return handle


def _settle(handle: SentinelDeployment) -> None:
    """Wait until the replica is in sync and every Sentinel knows one replica and two
    other Sentinels."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    replica = handle.base_port + 1
    while time.monotonic() < deadline:
        synced = "master_link_status:up" in handle.cli(replica, "INFO", "replication")
        known = all(
            _field(handle.cli(p, "SENTINEL", "master", SERVICE), "num-slaves") == "1"
            and _field(handle.cli(p, "SENTINEL", "master", SERVICE), "num-other-sentinels") == "2"
            for p in handle.sentinel_ports
        )
        if synced and known:
            return
        time.sleep(0.5)
    raise HAError(f"the Sentinels did not agree on master and replica within {SETTLE_TIMEOUT:g} s")


def _field(reply: str, name: str) -> str | None:
    """A value of redis-cli's alternating key/value lines."""
    lines = reply.splitlines()
    for key, value in zip(lines[::2], lines[1::2], strict=False):
        if key == name:
            return value
    return None


def _need(binary: str | None) -> str:
    if binary is None:
        raise HAError("redis-server and redis-cli are needed for Redis with Sentinel")
    return binary
