"""``ksched queue``: the QueueView the queue service published, read from the store."""

from __future__ import annotations

import asyncio
import json

import msgspec
import pytest

import services.common.store as stores
from contracts.queueview import QueuedPod, QueueView
from services.cli import queueview
from services.cli.main import main
from services.common.store.memory import MemoryStore
from services.common.tls import TLSFiles

NOW = 1_800_000_100.0
VIEW = QueueView(
    at=NOW - 0.5,
    applied_seq=42,
    counts={"active": 3, "backoff": 1, "unschedulable": 12, "gated": 1, "inflight": 128},
    heads={
        "active": [
            QueuedPod(pod="prod/critical", uid="u1", priority=1000, attempts=0, since=NOW - 2),
            QueuedPod(pod="prod/web-1", uid="u2", priority=0, attempts=2, since=NOW - 75),
            QueuedPod(pod="prod/web-2", uid="u3", priority=0, attempts=0, since=NOW - 1),
        ],
        "backoff": [
            QueuedPod(
                pod="prod/retry",
                uid="u4",
                priority=0,
                attempts=3,
                since=NOW - 1,
                backoff_until=NOW + 3.25,
                plugins=["NodeResourcesFit"],
            )
        ],
        "unschedulable": [
            QueuedPod(
                pod="batch/giant",
                uid="u5",
                priority=10,
                attempts=1,
                since=NOW - 4000,
                backoff_until=NOW - 30,
                plugins=["NodeAffinity", "NodeResourcesFit"],
            )
        ],
        "gated": [
            QueuedPod(
                pod="batch/held",
                uid="u6",
                priority=0,
                attempts=0,
                since=NOW,
                plugins=["SchedulingGates"],
                gates=["g"],
                message="Scheduling is blocked due to non-empty scheduling gates",
            )
        ],
    },
)


async def stored_view() -> bytes | None:
    """The view as the queue service leaves it: JSON in the store."""
    store = MemoryStore()
    await store.put_queue_view(msgspec.json.encode(VIEW))
    return await store.queue_view()


async def test_table_shows_counts_then_the_head_of_each_sub_queue(capsys):
    raw = await stored_view()
    assert queueview.show(raw, now=NOW, limit=2, output="table", where="memory") == 0
    assert capsys.readouterr().out == (
        "Queue view of 2027-01-15T08:01:39Z (0.5s ago), applied seq 42\n"
        "\n"
        "SUB-QUEUE      PODS\n"
        "active         3\n"
        "backoff        1\n"
        "unschedulable  12\n"
        "gated          1\n"
        "inflight       128\n"
        "\n"
        "active: first 2 of 3\n"
        "POD            PRIORITY  ATTEMPTS  BACKOFF  WAITING  REJECTED BY\n"
        "prod/critical  1000      0         -        2.0s     -\n"
        "prod/web-1     0         2         -        1m15s    -\n"
        "\n"
        "backoff: first 1 of 1\n"
        "POD         PRIORITY  ATTEMPTS  BACKOFF  WAITING  REJECTED BY\n"
        "prod/retry  0         3         in 3.2s  1.0s     NodeResourcesFit\n"
        "\n"
        "unschedulable: first 1 of 12\n"
        "POD          PRIORITY  ATTEMPTS  BACKOFF  WAITING  REJECTED BY\n"
        "batch/giant  10        1         expired  1h06m    NodeAffinity, NodeResourcesFit\n"
        "\n"
        "gated: first 1 of 1\n"
        "POD         PRIORITY  ATTEMPTS  BACKOFF  WAITING  PLUGIN           GATES  MESSAGE\n"
        "batch/held  0         0         -        0.0s     SchedulingGates  g      "
        "Scheduling is blocked due to non-empty scheduling gates\n"
        "\n"
        "inflight: 128 pods, none listed in the view\n"
    )


async def test_json_is_one_object_with_times_relative_to_now(capsys):
    raw = await stored_view()
    assert queueview.show(raw, now=NOW, limit=1, output="json", where="memory") == 0
    (line,) = capsys.readouterr().out.splitlines()
    shown = json.loads(line)
    assert (shown["ageSeconds"], shown["appliedSeq"]) == (0.5, 42)
    assert shown["counts"] == VIEW.counts
    assert [len(pods) for pods in shown["heads"].values()] == [1, 1, 1, 1, 0]
    assert shown["heads"]["backoff"] == [
        {
            "pod": "prod/retry",
            "uid": "u4",
            "priority": 0,
            "attempts": 3,
            "backoffSeconds": 3.25,
            "waitingSeconds": 1.0,
            "plugins": ["NodeResourcesFit"],
            "gates": [],
            "message": "",
        }
    ]
    [held] = shown["heads"]["gated"]
    assert (held["plugins"], held["message"]) == (
        ["SchedulingGates"],
        "Scheduling is blocked due to non-empty scheduling gates",
    )
    assert shown["heads"]["unschedulable"][0]["backoffSeconds"] == -30.0
    assert shown["heads"]["active"][0]["backoffSeconds"] is None


def test_limit_zero_shows_the_counts_only(capsys):
    raw = msgspec.json.encode(VIEW)
    assert queueview.show(raw, now=NOW, limit=0, output="table", where="memory") == 0
    out = capsys.readouterr().out
    assert out.endswith("inflight       128\n") and "REJECTED BY" not in out


def test_sub_queues_the_view_adds_are_shown_after_the_known_ones():
    view = QueueView(at=NOW, counts={"active": 1, "preEnqueue": 2})
    assert queueview.sub_queues(view)[-1] == "preEnqueue"
    assert queueview.view_json(view, NOW, 5)["counts"]["preEnqueue"] == 2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, "no queue view in memory: the queue service has not published one"),
        (b'{"kind": "Other"}', "the view in memory is not a QueueView"),
    ],
)
def test_no_view_or_a_bad_one_is_explained(capsys, raw, expected):
    assert queueview.show(raw, now=NOW, limit=5, output="table", where="memory") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert expected in captured.err


def test_the_command_reads_the_store_of_the_namespace(capsys, monkeypatch):
    opened: list[tuple[str, str]] = []
    store = MemoryStore("blue")
    asyncio.run(store.put_queue_view(msgspec.json.encode(VIEW)))

    def open_store(url: str, *, namespace: str, tls: TLSFiles, **_: object) -> MemoryStore:
        opened.append((url, namespace))
        return store

    monkeypatch.setattr(stores, "open_store", open_store)
    argv = ["queue", "--redis-url", "memory://", "--namespace", "blue", "--output", "json"]
    assert main([*argv, "--limit", "3"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert opened == [("memory://", "blue")]
    assert [p["pod"] for p in shown["heads"]["active"]] == [
        "prod/critical",
        "prod/web-1",
        "prod/web-2",
    ]


def test_the_command_opens_the_store_with_the_tls_settings(capsys, monkeypatch, tmp_path):
    """KSCHED_TLS_* reach the store ``ksched queue`` opens (as they reach the services')."""
    files = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key")}
    for path in files.values():
        path.write_text("not read: the store is faked\n")
    for name, path in files.items():
        monkeypatch.setenv(f"KSCHED_TLS_{name.upper()}", str(path))
    seen: list[TLSFiles] = []
    store = MemoryStore("ksched")
    asyncio.run(store.put_queue_view(msgspec.json.encode(VIEW)))

    def open_store(url: str, *, namespace: str, tls: TLSFiles, **_: object) -> MemoryStore:
        seen.append(tls)
        return store

    monkeypatch.setattr(stores, "open_store", open_store)
    assert main(["queue", "--redis-url", "rediss://redis.example:6380/0", "-o", "json"]) == 0
    capsys.readouterr()
    assert seen == [TLSFiles(str(files["ca"]), str(files["cert"]), str(files["key"]))]


def test_the_command_says_so_when_nothing_was_published(capsys):
    assert main(["queue", "--redis-url", "memory://"]) == 1
    assert "has not published one" in capsys.readouterr().err
