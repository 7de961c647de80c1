"""The chaos run's own RabbitMQ node and redis-server, restartable at will.

Both are plain (no TLS), listen on free ports of 127.0.0.1 and keep their files under
the run's directory, so the machine's RabbitMQ and Redis are never touched. RabbitMQ
restarts on the same node name, ports and data (durable queues and persistent messages
survive); redis-server runs with ``--save "" --appendonly no``, so a restart empties it.
Starting and stopping reuse the integration tests' bounded server runner
(:func:`tests.integration.tls_servers.server`): each waits for the server to say it is
ready, and stops its whole process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any

from tests.integration.tls_servers import RABBITMQ_SERVER, free_port, require, server


class Restartable:
    """A server run by a context manager: ``start`` enters it, ``stop`` leaves it."""

    def __init__(self, run: Callable[[], AbstractContextManager[Any]]) -> None:
        self._run = run
        self._stack: ExitStack | None = None

    def start(self) -> None:
        stack = ExitStack()
        stack.enter_context(self._run())
        self._stack = stack

    def stop(self) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            stack.close()

    def restart(self) -> None:
        self.stop()
        self.start()


class PrivateServers:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.amqp_port, self.redis_port, self._dist_port = free_port(), free_port(), free_port()
        self.amqp_url = f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/"
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.broker = Restartable(self._rabbitmq)
        self.redis = Restartable(self._redis)

    async def restart_broker(self) -> None:
        await asyncio.to_thread(self.broker.restart)

    async def restart_redis(self) -> None:
        await asyncio.to_thread(self.redis.restart)

    def _redis(self) -> AbstractContextManager[Any]:
        binary = require(shutil.which("redis-server"), "redis-server")
        directory = self.workdir / "redis"
        directory.mkdir(exist_ok=True)
        command = [
            binary, "--port", str(self.redis_port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(directory), "--logfile", "",
        ]  # fmt: skip
        return server(command, "Ready to accept connections", dict(os.environ), _log(directory))

    def _rabbitmq(self) -> AbstractContextManager[Any]:
        binary = require(RABBITMQ_SERVER, "rabbitmq-server")
        directory = self.workdir / "rabbitmq"
        for sub in ("mnesia", "log"):
            (directory / sub).mkdir(parents=True, exist_ok=True)
        config = directory / "rabbitmq.conf"
        config.write_text(f"listeners.tcp.default = 127.0.0.1:{self.amqp_port}\n")
        (directory / "enabled_plugins").write_text("[].\n")
        (directory / "rabbitmq-env.conf").write_text("")
        env = {
            **os.environ,
            "HOME": str(directory),  # its own Erlang cookie
            "RABBITMQ_CONF_ENV_FILE": str(directory / "rabbitmq-env.conf"),
            "RABBITMQ_NODENAME": f"ksched-chaos-{self.amqp_port}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.amqp_port),
            "RABBITMQ_DIST_PORT": str(self._dist_port),
            "RABBITMQ_CONFIG_FILE": str(config),
            "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
            "RABBITMQ_LOG_BASE": str(directory / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(directory / "rabbitmq.pid"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        }
        return server([binary], "Starting broker... completed", env, _log(directory))


def _log(directory: Path) -> Path:
    """A new log file per start, so a restart keeps the previous one."""
    n = sum(1 for _ in directory.glob("server-*.log"))
    return directory / f"server-{n}.log"


@contextlib.asynccontextmanager
async def private_servers(workdir: Path) -> AsyncIterator[PrivateServers]:
    servers = PrivateServers(workdir)
    try:
        await asyncio.to_thread(servers.redis.start)
        await asyncio.to_thread(servers.broker.start)
        yield servers
    finally:
        await asyncio.to_thread(servers.broker.stop)
        await asyncio.to_thread(servers.redis.stop)
