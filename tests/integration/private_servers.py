"""Servers of a test's own: a RabbitMQ node (plain AMQP or TLS only) that a test may stop,
start and drop connections on, a redis-server speaking only TLS, and throwaway
certificates made with openssl. Each runs on free ports with its own node name, Erlang
cookie, data and log directories under the test's tmp dir, so the machine's RabbitMQ
(5672) and Redis (6379), which other tests share, are never touched.

Every wait is bounded and waits on the server saying it is ready; every process started
here is stopped (its whole process group) when its block ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

READY_TIMEOUT = 90.0
RABBITMQ_SERVER = next(
    (
        str(p)
        for p in sorted(
            Path("/usr/lib/rabbitmq/lib").glob("rabbitmq_server-*/sbin/rabbitmq-server")
        )
    ),
    shutil.which("rabbitmq-server"),
)
RABBITMQCTL = (
    str(Path(RABBITMQ_SERVER).with_name("rabbitmqctl"))
    if RABBITMQ_SERVER
    else shutil.which("rabbitmqctl")
)
CTL_TIMEOUT = 60.0
"""Seconds a ``rabbitmqctl`` call may take."""


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    """A CA that signed nothing of these servers: trusting only it must fail."""


def require(binary: str | None, name: str) -> str:
    if binary is None or not os.access(binary, os.X_OK):
        pytest.skip(f"{name} is not installed (needed for a private server)")
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def make_certificates(directory: Path) -> Certificates:
    """A CA, a server certificate for localhost/127.0.0.1 and a client certificate."""
    openssl = require(shutil.which("openssl"), "openssl")
    directory.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=directory, check=True, capture_output=True)

    for ca in ("ca", "other-ca"):
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
            f"/CN=ksched test {ca}", "-keyout", f"{ca}.key", "-out", f"{ca}.pem")  # fmt: skip
    (directory / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for who in ("server", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={who}",
            "-keyout", f"{who}.key", "-out", f"{who}.csr")  # fmt: skip
        run("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-extfile", "san.ext",
            "-out", f"{who}.pem")  # fmt: skip
    for path in directory.iterdir():
        path.chmod(0o644)  # RabbitMQ may run as its own user; throwaway keys
    return Certificates(
        ca=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        other_ca=directory / "other-ca.pem",
    )


@contextlib.contextmanager
def server(
    command: Sequence[str], ready: str, env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` in its own process group until the block ends; return once a line
    of its output contains ``ready`` (bounded by READY_TIMEOUT)."""
    child = subprocess.Popen(
        list(command),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    seen = threading.Event()
    lines: list[str] = []

    def read() -> None:
        assert child.stdout is not None
        with log.open("w") as out:
            for raw in child.stdout:
                line = raw.decode(errors="replace")
                out.write(line)
                out.flush()
                lines.append(line)
                if ready in line:
                    seen.set()
        seen.set()  # exited: stop waiting

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not seen.wait(READY_TIMEOUT) or child.poll() is not None:
            raise AssertionError(f"{command[0]} did not start:\n" + "".join(lines[-40:]))
        yield child
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=10)
        reader.join(timeout=10)
        if child.stdout is not None:
            child.stdout.close()


@contextlib.contextmanager
def tls_redis(certs: Certificates, workdir: Path) -> Iterator[int]:
    """A redis-server with only a TLS port (client certificates required); its port."""
    binary = require(shutil.which("redis-server"), "redis-server")
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    command = [
        binary, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
        "--tls-cert-file", str(certs.server_cert), "--tls-key-file", str(certs.server_key),
        "--tls-ca-cert-file", str(certs.ca), "--tls-auth-clients", "yes",
        "--save", "", "--appendonly", "no", "--dir", str(workdir), "--logfile", "",
    ]  # fmt: skip
    with server(command, "Ready to accept connections", dict(os.environ), workdir / "redis.log"):
        yield port


class RabbitNode:
    """A RabbitMQ node of this test's own, stopped and started at will on the same node
    name, ports and data directory (durable queues and persistent messages survive a
    restart, as on a real broker). Plain AMQP on :attr:`port`, or with ``certs`` only
    TLS (peer certificate required, the default guest user). Use it as a context
    manager (started on entry, stopped on exit) or call :meth:`start`/:meth:`stop`."""

    def __init__(self, workdir: Path, *, certs: Certificates | None = None) -> None:
        self.workdir = workdir
        self.certs = certs
        self.port, self._node_port, self._dist_port = free_port(), free_port(), free_port()
        kind = "tls" if certs else "amqp"
        self.node_name = f"ksched-{kind}-{self.port}@localhost"
        self._stack: ExitStack | None = None
        self._starts = 0

    @property
    def url(self) -> str:
        scheme, host = ("amqps", "localhost") if self.certs else ("amqp", "127.0.0.1")
        return f"{scheme}://guest:guest@{host}:{self.port}/"

    def start(self) -> None:
        """Start the node; return once it says the broker started (bounded)."""
        binary = require(RABBITMQ_SERVER, "rabbitmq-server")
        env = self._environment()
        self._starts += 1
        stack = ExitStack()
        log = self.workdir / f"rabbitmq-{self._starts}.log"
        stack.enter_context(server([binary], "Starting broker... completed", env, log))
        self._stack = stack

    def stop(self) -> None:
        """Stop the node (SIGTERM to its process group, bounded; then SIGKILL)."""
        if self._stack is not None:
            stack, self._stack = self._stack, None
            stack.close()

    def close_all_connections(self) -> None:
        """Force-close every client connection (``rabbitmqctl close_all_connections``)."""
        binary = require(RABBITMQCTL, "rabbitmqctl")
        subprocess.run(
            [binary, "-n", self.node_name, "close_all_connections", "ksched test"],
            env=self._environment(),
            check=True,
            capture_output=True,
            timeout=CTL_TIMEOUT,
        )

    def __enter__(self) -> RabbitNode:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _environment(self) -> dict[str, str]:
        workdir = self.workdir
        workdir.mkdir(parents=True, exist_ok=True)
        for sub in ("mnesia", "log"):
            (workdir / sub).mkdir(exist_ok=True)
        config = workdir / "rabbitmq.conf"
        if self.certs is None:
            config.write_text(f"listeners.tcp.default = 127.0.0.1:{self.port}\n")
        else:
            config.write_text(
                "listeners.tcp = none\n"
                f"listeners.ssl.default = 127.0.0.1:{self.port}\n"
                f"ssl_options.cacertfile = {self.certs.ca}\n"
                f"ssl_options.certfile = {self.certs.server_cert}\n"
                f"ssl_options.keyfile = {self.certs.server_key}\n"
                "ssl_options.verify = verify_peer\n"
                "ssl_options.fail_if_no_peer_cert = true\n"
            )
        (workdir / "enabled_plugins").write_text("[].\n")
        (workdir / "rabbitmq-env.conf").write_text("")
        return {
            **os.environ,
            "HOME": str(workdir),  # its own Erlang cookie
            "RABBITMQ_CONF_ENV_FILE": str(workdir / "rabbitmq-env.conf"),
            "RABBITMQ_NODENAME": self.node_name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self._node_port),
            "RABBITMQ_DIST_PORT": str(self._dist_port),
            "RABBITMQ_CONFIG_FILE": str(config),
            "RABBITMQ_MNESIA_BASE": str(workdir / "mnesia"),
            "RABBITMQ_LOG_BASE": str(workdir / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(workdir / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(workdir / "rabbitmq.pid"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        }


@contextlib.contextmanager
def tls_rabbitmq(certs: Certificates, workdir: Path) -> Iterator[int]:
    """A RabbitMQ node with only a TLS listener (peer certificate required, the
    default guest user); its AMQPS port."""
    with RabbitNode(workdir, certs=certs) as node:
        yield node.port
