"""Redis with Sentinel on one machine: a master, one replica and three Sentinels.

    handle = start(workdir, base_port, password=None, tls=None)
    handle.url              # redis+sentinel://[:PASSWORD@]127.0.0.1:S1,...:S3/ksched/0
    handle.master_port      # the master as the Sentinels see it now (replica_port too)
    handle.sentinel_ports   # (S1, S2, S3)
    handle.failover()       # SENTINEL FAILOVER, returns once the replica is the master
    handle.signal(port, signal.SIGKILL); handle.restart(port)   # kill a server outright
    handle.data(port, "INFO", "replication"); handle.ask(sentinel_port, "SENTINEL", ...)
    handle.stop()

Ports: the master on ``base_port``, the replica on ``base_port + 1``, the Sentinels on
``base_port + 2 .. base_port + 4``. Each server runs in the foreground in its own process
group (its log in ``workdir``), without persistence (a Redis that restarts comes back
empty: ksched rebuilds its store from the event log). The Sentinels agree on a failure
with a quorum of 2 after :data:`DOWN_AFTER_MS`. ``password`` protects the master and the
replica (``requirepass``, ``masterauth``; the Sentinels use it as ``auth-pass``); the
Sentinels themselves take no password (bind them to a private interface), so
``KSCHED_REDIS_SENTINEL_PASSWORD`` stays unset for this deployment.

Only the standard library: the HA deployment (``ops/ha``) and the tests import this
file by path. Every wait is bounded (:data:`READY_TIMEOUT`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVICE = "ksched"
"""The name the Sentinels monitor the master under (the URL's SERVICE_NAME)."""
QUORUM = 2
DOWN_AFTER_MS = 1000
"""Milliseconds without a reply after which a Sentinel considers a server down."""
FAILOVER_TIMEOUT_MS = 5000
READY_TIMEOUT = 60.0
"""Seconds any one wait of this module may take."""
STOP_TIMEOUT = 10.0


class ReplyError(Exception):
    """An error reply of a Redis server or Sentinel."""


@dataclass(frozen=True)
class TLS:
    """PEM files: the servers' certificate and key (also their client certificate
    towards each other) and the CA that signed them (and the clients' certificates)."""

    ca: Path
    cert: Path
    key: Path


def command(
    port: int,
    *args: str,
    password: str | None = None,
    tls: TLS | None = None,
    timeout: float = 2.0,
) -> Any:
    """Send one command to the server on ``port`` (127.0.0.1) and return its reply
    (RESP2: str for simple strings, bytes for bulk strings, int, list, None)."""
    with contextlib.ExitStack() as stack:
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout))
        if tls is not None:
            context = ssl.create_default_context(cafile=str(tls.ca))
            context.load_cert_chain(str(tls.cert), str(tls.key))
            sock = stack.enter_context(context.wrap_socket(sock, server_hostname="127.0.0.1"))
        stream = stack.enter_context(sock.makefile("rb"))
        if password is not None:
            sock.sendall(_encode("AUTH", password))
            _read(stream)
        sock.sendall(_encode(*args))
        return _read(stream)


def _encode(*args: str) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def _read(stream: Any) -> Any:
    line: bytes = stream.readline()
    if not line:
        raise ConnectionError("the server closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise ReplyError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        if size < 0:
            return None
        data: bytes = stream.read(size + 2)[:-2]
        return data
    if kind == b"*":
        count = int(rest)
        return None if count < 0 else [_read(stream) for _ in range(count)]
    raise ConnectionError(f"unexpected reply {line[:40]!r}")


def parse_info(reply: bytes) -> dict[str, str]:
    """An ``INFO`` reply as a dict."""
    pairs = (line.split(":", 1) for line in reply.decode().splitlines() if ":" in line)
    return {key: value for key, value in pairs}


def wait_for(what: str, check: Any, timeout: float = READY_TIMEOUT) -> Any:
    """Poll ``check()`` until it returns something truthy (errors count as not yet);
    AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = check()
            if result:
                return result
            last = result
        except (OSError, ReplyError) as error:
            last = error
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")
        time.sleep(0.05)


@dataclass
class RedisSentinel:
    """The servers :func:`start` runs; see the module docstring."""

    workdir: Path
    base_port: int
    password: str | None = None
    tls: TLS | None = None
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def data_ports(self) -> tuple[int, int]:
        """The master's and the replica's ports as started."""
        return self.base_port, self.base_port + 1

    @property
    def sentinel_ports(self) -> tuple[int, int, int]:
        return self.base_port + 2, self.base_port + 3, self.base_port + 4

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        scheme = "rediss" if self.tls else "redis"
        return f"{scheme}+sentinel://{auth}{hosts}/{SERVICE}/0"

    @property
    def master_port(self) -> int:
        """The master's port as the first Sentinel that answers sees it now."""
        for port in self.sentinel_ports:
            with contextlib.suppress(OSError, ReplyError):
                _, master = self.ask(port, "SENTINEL", "get-master-addr-by-name", SERVICE)
                return int(master)
        raise ConnectionError("no Sentinel answers")

    @property
    def replica_port(self) -> int:
        """The port of the data server that is not the master now."""
        master = self.master_port
        return next(port for port in self.data_ports if port != master)

    def data(self, port: int, *args: str) -> Any:
        """One command to the data server on ``port`` (authenticated)."""
        return command(port, *args, password=self.password, tls=self.tls)

    def ask(self, port: int, *args: str) -> Any:
        """One command to the Sentinel on ``port``."""
        return command(port, *args, tls=self.tls)

    def info(self, port: int, section: str) -> dict[str, str]:
        """``INFO section`` of the data server on ``port``."""
        return parse_info(self.data(port, "INFO", section))

    def failover(self) -> int:
        """``SENTINEL FAILOVER`` and wait until the replica is the master, every
        Sentinel agrees and the old master replicates from it; the new master's port."""
        old = self.master_port
        new = next(port for port in self.data_ports if port != old)
        wait_for(
            "SENTINEL FAILOVER accepted",
            lambda: self.ask(self.sentinel_ports[0], "SENTINEL", "FAILOVER", SERVICE) == "OK",
        )
        self.wait_master(new)
        if old in self.processes:
            wait_for(
                f"the old master on port {old} a replica",
                lambda: self.info(old, "replication")["role"] == "slave",
            )
        return new

    def wait_master(self, port: int) -> None:
        """Wait until ``port`` is a master every Sentinel reports (bounded)."""

        def agreed() -> bool:
            seen = {
                int(self.ask(s, "SENTINEL", "get-master-addr-by-name", SERVICE)[1])
                for s in self.sentinel_ports
            }
            return seen == {port} and self.info(port, "replication")["role"] == "master"

        wait_for(f"Redis on port {port} the master for every Sentinel", agreed)

    def signal(self, port: int, signum: int) -> None:
        """Send ``signum`` to the server on ``port`` (SIGKILL, SIGSTOP, SIGCONT...)."""
        os.killpg(self.processes[port].pid, signum)
        if signum in (signal.SIGKILL, signal.SIGTERM):
            self.processes.pop(port).wait(STOP_TIMEOUT)

    def restart(self, port: int) -> None:
        """Start the data server on ``port`` again (after it was killed): it comes back
        empty, as a replica of the current master. A master is restarted only once the
        Sentinels failed over to the other server (bounded): back as an empty master it
        would empty its replica too."""
        assert port not in self.processes, f"Redis on port {port} still runs"
        master = wait_for(
            f"the Sentinels failing over from port {port}",
            lambda: (m := self.master_port) != port and m,
        )
        self._data_server(port, replica_of=master)

    def stop(self) -> None:
        """Stop every server (SIGTERM to its process group, then SIGKILL; bounded)."""
        for port, child in list(self.processes.items()):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGCONT)
                os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait(STOP_TIMEOUT)
            del self.processes[port]

    def __enter__(self) -> RedisSentinel:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _spawn(self, port: int, argv: list[str]) -> None:
        with (self.workdir / f"{port}.log").open("ab") as log:
            self.processes[port] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_for(f"Redis on port {port} answering", lambda: self._ping(port))

    def _ping(self, port: int) -> bool:
        if self.processes[port].poll() is not None:
            raise AssertionError(f"redis-server on port {port} exited; see {self.workdir}")
        reply = self.data(port, "PING") if port in self.data_ports else self.ask(port, "PING")
        return bool(reply == "PONG")

    def _listen(self, port: int) -> list[str]:
        """The options that make a server listen on ``port`` (TLS only with ``tls``)."""
        if self.tls is None:
            return ["--port", str(port)]
        return [
            "--port", "0", "--tls-port", str(port), "--tls-replication", "yes",
            "--tls-cert-file", str(self.tls.cert), "--tls-key-file", str(self.tls.key),
            "--tls-ca-cert-file", str(self.tls.ca), "--tls-auth-clients", "yes",
        ]  # fmt: skip

    def _data_server(self, port: int, *, replica_of: int | None) -> None:
        data = self.workdir / str(port)
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        argv = [_binary(), *self._listen(port), "--bind", "127.0.0.1", "--dir", str(data)]
        argv += ["--save", "", "--appendonly", "no", "--logfile", ""]
        if self.password:
            argv += ["--requirepass", self.password, "--masterauth", self.password]
        if replica_of is not None:
            argv += ["--replicaof", "127.0.0.1", str(replica_of)]
        self._spawn(port, argv)

    def _sentinel(self, port: int) -> None:
        conf = self.workdir / f"sentinel-{port}.conf"
        listen = self._listen(port)
        lines = [
            *(f"{listen[i][2:]} {listen[i + 1]}" for i in range(0, len(listen), 2)),
            "bind 127.0.0.1",
            f"dir {self.workdir}",
            'logfile ""',
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.base_port} {QUORUM}",
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {SERVICE} 1",
        ]
        if self.password:
            lines.append(f"sentinel auth-pass {SERVICE} {self.password}")
        conf.write_text("\n".join(lines) + "\n")  # the Sentinel rewrites it: its state
        self._spawn(port, [_binary(), str(conf), "--sentinel"])


def _binary() -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        raise FileNotFoundError("redis-server is not installed (needed for Redis with Sentinel)")
    return binary


def start(
    workdir: Path | str, base_port: int, password: str | None = None, *, tls: TLS | None = None
) -> RedisSentinel:
    """Start the master, the replica and the Sentinels (see the module docstring) and
    return once the replica is in sync and every Sentinel knows the replica and the two
    other Sentinels (so that a failover can be agreed at once). Stops what it started
    if that does not happen within :data:`READY_TIMEOUT` (AssertionError). ``tls``:
    every server listens with TLS only and asks clients for a certificate the CA signed
    (the URL is then ``rediss+sentinel://``)."""
    handle = RedisSentinel(Path(workdir), base_port, password, tls)
    handle.workdir.mkdir(parents=True, exist_ok=True)
    master, replica = handle.data_ports
    try:
        handle._data_server(master, replica_of=None)
        handle._data_server(replica, replica_of=master)
        wait_for(
            "the replica in sync",
            lambda: handle.info(replica, "replication").get("master_link_status") == "up",
        )
        for port in handle.sentinel_ports:
            handle._sentinel(port)

        def sentinels_ready() -> bool:
            for port in handle.sentinel_ports:
                state = handle.ask(port, "SENTINEL", "master", SERVICE)
                fields = dict(zip(state[::2], state[1::2], strict=True))
                if int(fields[b"num-slaves"]) < 1 or int(fields[b"num-other-sentinels"]) < 2:
                    return False
            return True

        wait_for("every Sentinel knowing the replica and the other Sentinels", sentinels_ready)
    except BaseException:
        handle.stop()
        raise
    return handle
