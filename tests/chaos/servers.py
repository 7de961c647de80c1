"""The chaos run's own RabbitMQ node and redis-server, restartable at will.

Both are plain (no TLS), listen on free ports of 127.0.0.1 and keep their files under
the run's directory, so the machine's RabbitMQ and Redis are never touched. RabbitMQ is
the integration tests' :class:`~tests.integration.private_servers.RabbitNode`: a restart
keeps its node name, ports and data (durable queues and persistent messages survive).
redis-server runs with ``--save "" --appendonly no``, so a restart empties it. Each start
waits (bounded) for the server to say it is ready; each stop ends its process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import ExitStack
from pathlib import Path

from tests.integration.private_servers import (
    RABBITMQCTL,
    RabbitNode,
    free_port,
    require,
    server,
)


class RedisServer:
    """A plain redis-server on a fixed free port that keeps nothing on disk."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._stack: ExitStack | None = None
        self._starts = 0

    def start(self) -> None:
        binary = require(shutil.which("redis-server"), "redis-server")
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = [
            binary, "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(self.workdir), "--logfile", "",
        ]  # fmt: skip
        self._starts += 1
        log = self.workdir / f"redis-{self._starts}.log"
        stack = ExitStack()
        stack.enter_context(server(command, "Ready to accept connections", dict(os.environ), log))
        self._stack = stack

    def stop(self) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            stack.close()


class PrivateServers:
    def __init__(self, workdir: Path) -> None:
        self.broker = RabbitNode(workdir / "rabbitmq")
        self.redis = RedisServer(workdir / "redis")
        self.amqp_url = self.broker.url
        self.redis_url = self.redis.url

    async def restart_broker(self) -> None:
        await asyncio.to_thread(self.broker.stop)
        await asyncio.to_thread(self.broker.start)

    async def describe_queues(self) -> str:
        """``rabbitmqctl list_queues`` of the run's node (ready, unacknowledged, consumers),
        for the record when a run fails; the error text if it cannot be had."""
        binary = require(RABBITMQCTL, "rabbitmqctl")
        columns = ["name", "messages_ready", "messages_unacknowledged", "consumers"]
        command = [binary, "-q", "-n", self.broker.node_name, "list_queues", *columns]
        env = {**os.environ, "HOME": str(self.broker.workdir)}  # the node's Erlang cookie
        try:
            done = await asyncio.to_thread(
                subprocess.run, command, env=env, capture_output=True, text=True, timeout=60
            )
        except subprocess.TimeoutExpired:
            return "rabbitmqctl list_queues did not answer within 60 s"
        return done.stdout if done.returncode == 0 else done.stderr

    async def restart_redis(self) -> None:
        await asyncio.to_thread(self.redis.stop)
        await asyncio.to_thread(self.redis.start)


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
