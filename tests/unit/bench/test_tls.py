"""``ksched bench --mode services`` opens its bus and store with the TLS settings, and
hands the same files to the service processes it starts."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from bench import services as bench
from bench.config import load_workloads
from services.common.settings import Settings, from_env
from services.common.tls import NO_TLS_FILES, TLSFiles

WORKLOADS = load_workloads()


class _Stop(Exception):
    """Raised by the fake bus once the edges are open: nothing else is needed."""


class _FakeEdge:
    async def declare(self, *_: Any) -> None:
        raise _Stop

    async def flush_namespace(self) -> None:
        pass

    async def delete_namespace(self, queues: Iterable[str] = ()) -> None:
        pass

    async def close(self) -> None:
        pass


def _tls_settings(tmp_path: Path) -> Settings:
    files = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key")}
    for path in files.values():
        path.write_text("not read: the edges are faked\n")
    environ = {f"KSCHED_TLS_{name.upper()}": str(path) for name, path in files.items()}
    return from_env(
        environ,
        amqp_url="amqps://rabbit.example:5671/",
        redis_url="rediss://redis.example:6380/0",
    )


async def test_the_services_mode_opens_bus_and_store_with_the_tls_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _tls_settings(tmp_path)
    opened: list[tuple[str, str, TLSFiles]] = []

    def edge(kind: str) -> Any:
        def open_edge(
            url: str, *, namespace: str, tls: TLSFiles = NO_TLS_FILES, **_: object
        ) -> _FakeEdge:
            opened.append((kind, url, tls))
            return _FakeEdge()

        return open_edge

    monkeypatch.setattr(bench, "open_bus", edge("bus"))
    monkeypatch.setattr(bench, "open_store", edge("store"))
    with pytest.raises(_Stop):
        await bench.bench_services(WORKLOADS["SchedulingBasic"], 2, 0, 1, settings)
    assert opened == [
        ("bus", "amqps://rabbit.example:5671/", settings.tls),
        ("store", "rediss://redis.example:6380/0", settings.tls),
    ]
    assert settings.tls.ca and settings.tls.cert and settings.tls.key


def test_the_service_processes_get_the_same_tls_files(tmp_path: Path) -> None:
    settings = _tls_settings(tmp_path)
    assert bench.tls_env(settings) == {
        "KSCHED_TLS_CA": settings.tls_ca,
        "KSCHED_TLS_CERT": settings.tls_cert,
        "KSCHED_TLS_KEY": settings.tls_key,
    }
    assert bench.tls_env(from_env({})) == {}
