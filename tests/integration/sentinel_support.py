"""A Redis master, one replica and three Sentinels of a test's own, from
``ops/ha/redis_sentinel.py`` (the HA deployment's starter), on free ports in the
test's tmp dir; stopped when the block ends."""

from __future__ import annotations

import contextlib
import importlib.util
import random
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.integration.private_servers import Certificates

STARTER = Path(__file__).resolve().parents[2] / "ops" / "ha" / "redis_sentinel.py"
PORTS = 5
"""The starter's ports: master, replica, three Sentinels, consecutive."""


def starter() -> ModuleType:
    """ops/ha/redis_sentinel.py, imported by path (ops is no package)."""
    name = "ksched_ops_redis_sentinel"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, STARTER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def free_base_port(tries: int = 50) -> int:
    """A port P such that P .. P + PORTS - 1 are free on 127.0.0.1 now, below the
    kernel's ephemeral range: a port in it can be taken between this check and the
    server's start by any outgoing connection (a client of the master, say), which once
    made a Sentinel fail with "Address already in use". Above 21,000: the HA chaos run's
    deployment takes 20,000 and the next 50."""
    for _ in range(tries):
        base = random.randrange(21_000, _ephemeral_low() - PORTS)
        with contextlib.ExitStack() as stack:
            try:
                for port in range(base, base + PORTS):
                    sock = stack.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return base
    raise AssertionError(f"no {PORTS} consecutive free ports in {tries} tries")


def _ephemeral_low() -> int:
    """The first port of Linux's ephemeral range (32768 by default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


@contextlib.contextmanager
def redis_sentinel(
    workdir: Path, password: str | None = None, certs: Certificates | None = None
) -> Iterator[Any]:
    """The starter's handle (``.url``, ``.master_port``, ``.failover()``, ...); with
    ``certs``, every server speaks TLS only (the server certificate and key)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (needed for Redis with Sentinel)")
    module = starter()
    tls = None if certs is None else module.TLS(certs.ca, certs.server_cert, certs.server_key)
    handle = module.start(workdir, free_base_port(), password=password, tls=tls)
    try:
        yield handle
    finally:
        handle.stop()


def in_sync(handle: Any) -> bool:
    """Whether the replica has every write the master has (their offsets agree)."""
    master = handle.info(handle.master_port, "replication")
    replica = handle.info(handle.replica_port, "replication")
    return bool(
        replica.get("master_link_status") == "up"
        and replica["slave_repl_offset"] == master["master_repl_offset"]
    )
