"""Moving a file log into a stream (``ksched log copy``; a trimmed one from its newest
snapshot), then ``ksched replay --check`` on the stream, against the real broker."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import aio_pika
import pytest

from services.cli.eventlogs import copy_log
from services.cli.main import main
from services.common.eventlog import FileEventLog, read_all
from tests.contract.bus_support import AMQP_URL
from tests.contract.eventlog_support import events
from tests.contract.stream_support import StreamLogs
from tests.unit.cli.support import EXAMPLE

pytestmark = pytest.mark.integration


async def _delete(namespace: str, name: str) -> None:
    async with await aio_pika.connect(AMQP_URL) as connection:
        channel = await connection.channel()
        for suffix in ("", ".fences", ".snapshots"):
            await channel.queue_delete(f"{namespace}.{name}{suffix}")


@pytest.fixture
def namespace(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"t{uuid4().hex[:8]}"
    monkeypatch.setenv("KSCHED_AMQP_URL", AMQP_URL)
    monkeypatch.setenv("KSCHED_NAMESPACE", name)
    yield name
    asyncio.run(_delete(name, "runs"))


def test_a_file_log_copied_into_a_stream_replays_the_same(
    namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "run.jsonl"
    assert main(["simulate", str(EXAMPLE), "--record", str(record), "-o", "json"]) == 0
    entries = len(record.read_text().splitlines())
    capsys.readouterr()

    assert main(["log", "copy", str(record), "stream://runs"]) == 0
    assert f"copied seq 1..{entries} from {record} to stream://runs" in capsys.readouterr().err
    assert main(["log", "copy", str(record), "stream://runs"]) == 0  # nothing left to copy
    assert "holds every entry" in capsys.readouterr().err

    assert main(["replay", "stream://runs", "--check", "-o", "json"]) == 0
    from_stream = capsys.readouterr().out
    assert main(["replay", str(record), "--check", "-o", "json"]) == 0
    assert capsys.readouterr().out == from_stream
    assert from_stream.count('"Binding"') > 0


def test_replaying_a_missing_file_still_names_it(namespace: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    assert main(["replay", str(missing)]) == 2
    assert not missing.exists()


async def test_a_file_log_trimmed_by_retention_moves_from_its_snapshot(tmp_path: Path) -> None:
    source = await FileEventLog.open(tmp_path / "events.jsonl")
    await source.append(events(1, 10))
    await source.write_snapshot(6, b"the projection at 6")
    await source.retain(4)  # the file now begins at seq 5
    streams = StreamLogs()
    try:
        target = streams.open()
        assert await copy_log(source, target) == (7, 10)
        assert await target.latest_snapshot() == (6, b"the projection at 6")
        reader = streams.open()
        await reader.connect()
        assert reader.last_seq() == 10
        assert await read_all(reader) == events(7, 10)
        assert await copy_log(source, target) == (0, 0)  # nothing left to copy
        with pytest.raises(ValueError, match="dropped by its retention: copy it into a stream"):
            await copy_log(source, await FileEventLog.open(tmp_path / "copy.jsonl"))
    finally:
        await source.close()
        await streams.aclose()
