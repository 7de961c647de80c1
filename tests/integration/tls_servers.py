"""Throwaway TLS servers for the security tests: a CA and certificates made with openssl,
a second redis-server listening only on ``--tls-port`` and a second RabbitMQ node
listening only on ``listeners.ssl.default``, each on free ports, with its own data and
log directories under the test's tmp dir. Both require a client certificate (mutual
TLS). The system's RabbitMQ (5672) and Redis (6379) are never touched.

Every wait is bounded and waits on the server saying it is ready; every process started
here is stopped (its whole process group) when the fixture ends.
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
        pytest.skip(f"{name} is not installed (needed for the TLS tests)")
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


@contextlib.contextmanager
def tls_rabbitmq(certs: Certificates, workdir: Path) -> Iterator[int]:
    """A second RabbitMQ node with only a TLS listener (peer certificate required, the
    default guest user); its AMQPS port."""
    binary = require(RABBITMQ_SERVER, "rabbitmq-server")
    port, node_port, dist_port = free_port(), free_port(), free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    for sub in ("mnesia", "log"):
        (workdir / sub).mkdir(exist_ok=True)
    config = workdir / "rabbitmq.conf"
    config.write_text(
        "listeners.tcp = none\n"
        f"listeners.ssl.default = 127.0.0.1:{port}\n"
        f"ssl_options.cacertfile = {certs.ca}\n"
        f"ssl_options.certfile = {certs.server_cert}\n"
        f"ssl_options.keyfile = {certs.server_key}\n"
        "ssl_options.verify = verify_peer\n"
        "ssl_options.fail_if_no_peer_cert = true\n"
    )
    (workdir / "enabled_plugins").write_text("[].\n")
    (workdir / "rabbitmq-env.conf").write_text("")
    env = {
        **os.environ,
        "HOME": str(workdir),  # its own Erlang cookie
        "RABBITMQ_CONF_ENV_FILE": str(workdir / "rabbitmq-env.conf"),
        "RABBITMQ_NODENAME": f"ksched-tls-{port}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(node_port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "RABBITMQ_CONFIG_FILE": str(config),
        "RABBITMQ_MNESIA_BASE": str(workdir / "mnesia"),
        "RABBITMQ_LOG_BASE": str(workdir / "log"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(workdir / "enabled_plugins"),
        "RABBITMQ_PID_FILE": str(workdir / "rabbitmq.pid"),
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        "ERL_EPMD_ADDRESS": "127.0.0.1",
    }
    with server([binary], "Starting broker... completed", env, workdir / "rabbitmq.log"):
        yield port
