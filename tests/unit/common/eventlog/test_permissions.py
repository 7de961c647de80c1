"""The event log holds every object users sent: its file and new directories are owner-only."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from services.common.eventlog import FileEventLog


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> object:
    """The most permissive umask, so only the code's own modes protect the files."""
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("open_umask")
@pytest.mark.parametrize("depth", [0, 1, 3])
def test_a_new_log_and_its_new_directories_are_owner_only(tmp_path: Path, depth: int) -> None:
    tmp_path.chmod(0o755)
    directory = tmp_path.joinpath(*(f"d{i}" for i in range(depth)))
    log = FileEventLog(directory / "events.jsonl")
    asyncio.run(log.close())
    assert _mode(directory / "events.jsonl") == 0o600
    created = [tmp_path.joinpath(*(f"d{i}" for i in range(n + 1))) for n in range(depth)]
    assert [oct(_mode(d)) for d in created] == [oct(0o700)] * depth
    assert _mode(tmp_path) == 0o755  # an existing directory is not ours to change


@pytest.mark.usefixtures("open_umask")
def test_an_existing_world_readable_log_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"")
    path.chmod(0o644)
    log = FileEventLog(path)
    asyncio.run(log.close())
    assert _mode(path) == 0o600
