"""A RabbitMQ cluster of three nodes on one machine, from the system's rabbitmq-server.

Node ``i`` (1-based) is ``rabbit-ha{i}@localhost`` with AMQP on ``base + i - 1`` and
Erlang distribution on ``base + 10 + i - 1``; the cluster's own Erlang port mapper (epmd)
listens on ``base + 20``, so nothing registers with the machine's. All nodes share one
Erlang cookie (``HOME`` is the cluster's directory) and keep their data and logs under
``workdir/rabbit-ha{i}``. The nodes start on their own, then nodes 2 and 3 join node 1
(``rabbitmqctl join_cluster``). A node stopped or killed and started again keeps its
name, ports and data, so it rejoins the cluster by itself.

The scripts are run directly from ``/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin``: the
``/usr/sbin`` wrappers switch to the ``rabbitmq`` user and its fixed directories.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import threading
from pathlib import Path

from ops.ha.processes import Child, HAError

SIZE = 3
PORTS = 21
"""Ports the cluster takes from its base: AMQP, distribution and epmd."""
CTL_TIMEOUT = 60.0
READY = ("Starting broker... completed", "Server startup complete")


def _sbin(name: str) -> str | None:
    found = sorted(Path("/usr/lib/rabbitmq/lib").glob(f"rabbitmq_server-*/sbin/{name}"))
    return str(found[-1]) if found else shutil.which(name)


RABBITMQ_SERVER = _sbin("rabbitmq-server")
RABBITMQCTL = _sbin("rabbitmqctl")
EPMD = shutil.which("epmd") or next(
    (str(p) for p in sorted(Path("/usr/lib/erlang").glob("erts-*/bin/epmd"))), None
)


def available() -> str | None:
    """Why a cluster cannot be started here, or None when it can."""
    for name, binary in (("rabbitmq-server", RABBITMQ_SERVER), ("epmd", EPMD)):
        if binary is None or not os.access(binary, os.X_OK):
            return f"{name} is not installed"
    return None


class RabbitNode:
    def __init__(self, cluster: RabbitCluster, index: int) -> None:
        self.index = index
        self.name = f"rabbit-ha{index}@localhost"
        self.port = cluster.base_port + index - 1
        self.dist_port = cluster.base_port + 10 + index - 1
        self.workdir = cluster.workdir / f"rabbit-ha{index}"
        self.url = f"amqp://guest:guest@127.0.0.1:{self.port}/"
        self.child = Child(
            self.name, [_need(RABBITMQ_SERVER)], self._env(cluster), self.workdir / "server.log"
        )

    def _env(self, cluster: RabbitCluster) -> dict[str, str]:
        work = self.workdir
        for sub in ("mnesia", "log"):
            (work / sub).mkdir(parents=True, exist_ok=True)
        (work / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            "log.console = true\nlog.console.level = info\nlog.file = false\n"
        )
        (work / "enabled_plugins").write_text("[].\n")
        (work / "rabbitmq-env.conf").write_text("")
        return {
            **cluster.ctl_env,
            "RABBITMQ_CONF_ENV_FILE": str(work / "rabbitmq-env.conf"),
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_CONFIG_FILE": str(work / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(work / "advanced.config"),
            "RABBITMQ_MNESIA_BASE": str(work / "mnesia"),
            "RABBITMQ_LOG_BASE": str(work / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(work / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(work / "rabbitmq.pid"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": (
                "-kernel inet_dist_use_interface {127,0,0,1} -start_epmd false"
            ),
        }

    def start(self) -> None:
        """Start the node; return once it says the broker started (bounded)."""
        self.child.start()
        self.child.wait_ready(*READY)

    def stop(self) -> None:
        self.child.stop()

    def kill(self) -> None:
        self.child.kill()


class RabbitCluster:
    """Three clustered nodes; :meth:`start` and :meth:`stop` the whole of it."""

    def __init__(self, workdir: Path, base_port: int) -> None:
        self.workdir = workdir
        self.base_port = base_port
        self.epmd_port = base_port + 20
        workdir.mkdir(parents=True, exist_ok=True)
        cookie = workdir / ".erlang.cookie"
        if not cookie.exists():
            cookie.write_text(secrets.token_hex(20))
            cookie.chmod(0o400)
        self.ctl_env = {
            **os.environ,
            "HOME": str(workdir),  # the one Erlang cookie of every node and rabbitmqctl
            "ERL_EPMD_PORT": str(self.epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            # Never start an epmd daemon of its own (it would outlive the cluster):
            # the cluster's epmd runs first and stops last.
            "RABBITMQ_CTL_ERL_ARGS": "-start_epmd false",
        }
        self.epmd = Child(
            "epmd",
            [_need(EPMD), "-port", str(self.epmd_port), "-address", "127.0.0.1"],
            self.ctl_env,
            workdir / "epmd.log",
        )
        self.nodes = [RabbitNode(self, i) for i in range(1, SIZE + 1)]

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def amqp_url(self) -> str:
        """Every node's URL, comma-separated (KSCHED_AMQP_URL)."""
        return ",".join(self.urls)

    def start(self) -> None:
        """Start epmd and the three nodes (in parallel), then cluster them."""
        self.epmd.start()
        errors: list[HAError] = []

        def start(node: RabbitNode) -> None:
            try:
                node.start()
            except HAError as error:
                errors.append(error)

        threads = [threading.Thread(target=start, args=(n,)) for n in self.nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        first = self.nodes[0].name
        for node in self.nodes[1:]:
            if first in self.ctl(node, "cluster_status", "--formatter", "json"):
                continue  # a restart of a deployment that was clustered before
            self.ctl(node, "stop_app")
            self.ctl(node, "join_cluster", first)
            self.ctl(node, "start_app")

    def stop(self) -> None:
        """Stop every node (SIGTERM, bounded), then epmd."""
        threads = [threading.Thread(target=n.stop) for n in self.nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.epmd.stop()
        kill_epmd(self.epmd_port)

    def ctl(self, node: RabbitNode, *args: str, timeout: float = CTL_TIMEOUT) -> str:
        """``rabbitmqctl -n NODE ARGS``: its output; HAError with its message if it fails."""
        command = [_need(RABBITMQCTL), "-q", "-n", node.name, *args]
        try:
            done = subprocess.run(
                command, env=self.ctl_env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise HAError(
                f"rabbitmqctl {args[0]} on {node.name}: no answer in {timeout:g} s"
            ) from None
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()
            raise HAError(
                f"rabbitmqctl {args[0]} on {node.name}: {why[-1] if why else done.returncode}"
            )
        return done.stdout

    def running_node(self) -> RabbitNode:
        """A node that runs (the first), for asking the cluster something."""
        for node in self.nodes:
            if node.child.running:
                return node
        raise HAError("no RabbitMQ node of the cluster is running")

    def leaders(self, node: RabbitNode | None = None) -> dict[str, str]:
        """Queue name → the node that leads it (quorum queues and streams), as ``node``
        (default: the first running node) reports them."""
        asked = node or self.running_node()
        out = self.ctl(asked, "list_queues", "name", "type", "leader", "--formatter", "json")
        return {
            row["name"]: row["leader"]
            for row in json.loads(out or "[]")
            if row.get("type") in ("quorum", "stream") and row.get("leader")
        }

    def running_nodes(self, node: RabbitNode | None = None) -> list[str]:
        """The nodes of the cluster that run, as ``node`` sees them."""
        out = self.ctl(node or self.running_node(), "cluster_status", "--formatter", "json")
        names: list[str] = json.loads(out).get("running_nodes", [])
        return names

    def node_named(self, name: str) -> RabbitNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise HAError(f"{name} is not a node of this cluster")


def kill_epmd(port: int) -> None:
    """Stop whatever epmd still listens on ``port`` (``epmd -kill``): one that an Erlang
    program started as a daemon when the cluster's own was down."""
    if EPMD is not None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                [EPMD, "-port", str(port), "-kill"],
                env={**os.environ, "ERL_EPMD_ADDRESS": "127.0.0.1"},
                capture_output=True,
                timeout=10,
            )


def _need(binary: str | None) -> str:
    if binary is None:
        raise HAError("rabbitmq-server (and its epmd) are not installed")
    return binary
