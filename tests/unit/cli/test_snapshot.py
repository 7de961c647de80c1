"""``ksched snapshot``: every kind round-trips (snapshot → read_documents → the same
objects), from the store and from the event log; a snapshot taken with pods pending
gives ``simulate`` the bindings the services then make; the store is read at one
applied seq (its seq moving between reads is injected, nothing sleeps); bad input is
one line and exit 2."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from services.cli.eventlogs import NOT_A_FILE
from services.cli.main import main
from services.cli.manifests import read_documents
from services.cli.simulate import load_cluster, simulate
from services.cli.snapshot import (
    ATTEMPTS,
    SEQ_ANNOTATION,
    SOURCE_ANNOTATION,
    cluster_list,
    from_log,
    from_store,
)
from services.common import features
from services.common.eventlog import MemoryEventLog
from services.common.eventlog.base import read_all
from services.common.eventlog.snapshot import KIND_ORDER, encode
from services.common.store import Epoch, MemoryStore
from tests.unit.cli.snapshot_support import (
    SEED,
    MovingStore,
    accepted,
    bindings,
    documents_of,
    every_kind,
    held,
    read_back,
    small_cluster,
    snapshot_text,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _workload_kinds() -> Iterator[None]:
    """The Workload API kinds are ingested only with their gate on."""
    features.install(features.parse("GenericWorkload=true"))
    yield
    features.install(features.DEFAULTS)


async def test_every_kind_round_trips_from_the_store_and_from_the_log() -> None:
    documents = every_kind()
    expected = accepted(documents)
    assert {kind for kind, _ in expected} == set(KIND_ORDER)
    async with held(documents) as cluster:
        from_the_store = await from_store(cluster.store.client())
        from_the_log = await from_log(cluster.log, "the event log")
    assert from_the_store.seq == from_the_log.seq == cluster.log.last_seq() > 0
    for taken in (from_the_store, from_the_log):
        text = snapshot_text(taken)
        assert read_back(text) == expected
        listed = yaml.safe_load(text)
        assert listed["metadata"]["annotations"] == {
            SEQ_ANNOTATION: str(taken.seq),
            SOURCE_ANNOTATION: taken.source,
        }
        assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
        assert all(item["apiVersion"] and item["kind"] for item in listed["items"])


async def test_bound_pods_keep_their_node_and_the_log_folds_as_the_store_applies() -> None:
    gone = read_documents(yaml.safe_dump(small_cluster()[3]), event_type="DELETED")
    async with held(documents_of(small_cluster())) as cluster:
        cluster.release()
        await cluster.settle()
        await cluster.publish(gone)
        await cluster.settle()
        from_the_store = await from_store(cluster.store.client())
        from_the_log = await from_log(cluster.log, "the event log")
        made = bindings(cluster.decisions)
    assert len(made) == 5
    assert from_the_store.seq == from_the_log.seq == cluster.log.last_seq()
    text = snapshot_text(from_the_log)
    assert snapshot_text(from_the_store) == text.replace(
        f"{SOURCE_ANNOTATION}: event-log", f"{SOURCE_ANNOTATION}: store"
    )
    pods = {key: obj for (kind, key), obj in read_back(text).items() if kind == "pod"}
    assert {key: p.spec.node_name for key, p in pods.items()} == {  # type: ignore[union-attr]
        "demo/bound-2": "mid",  # demo/bound-1 was deleted
        "demo/bound-3": "small",
        **made,
    }


async def test_a_log_is_read_from_its_newest_snapshot_on() -> None:
    async with held(documents_of(small_cluster())) as cluster:
        cluster.release()
        await cluster.settle()
        whole = await from_log(cluster.log, "the event log")
        entries = await read_all(cluster.log)
    cut = len(entries) // 2
    head = MemoryEventLog()
    await head.append(entries[:cut])
    at_cut = await from_log(head, "head")
    body = encode(
        cut, ((kind, obj) for kind in KIND_ORDER for obj in at_cut.objects.encoded_all(kind))
    )
    trimmed = MemoryEventLog()
    await trimmed.append(entries[:cut])
    await trimmed.write_snapshot(cut, body)
    await trimmed.retain(cut)
    await trimmed.append(entries[cut:])
    assert snapshot_text(await from_log(trimmed, "trimmed")) == snapshot_text(whole)


async def test_a_snapshot_with_pods_pending_gives_simulate_the_services_bindings() -> None:
    async with held(documents_of(small_cluster())) as cluster:
        text = snapshot_text(await from_store(cluster.store.client()))
        cluster.release()
        await cluster.settle()
        made = bindings(cluster.decisions)
    assert set(made) == {f"demo/pending-{i}" for i in range(5)}
    simulated = bindings(await simulate(load_cluster(text, "snap.yaml"), seed=SEED))
    assert simulated == made


async def test_a_blank_store_is_an_empty_list() -> None:
    taken = await from_store(MemoryStore())
    assert taken.seq == 0
    assert cluster_list(taken)["items"] == []


def live(seq: int, token: str = "t1") -> Epoch:
    return Epoch("live", token, seq)


@pytest.mark.parametrize(
    ("epochs", "lost", "pauses", "atomic"),
    [
        pytest.param([live(3), live(4)], 0, [], 1, id="a batch applied between the reads"),
        pytest.param([live(3), live(3, "t2")], 0, [0], 0, id="rebuilt between the reads"),
        pytest.param(
            [Epoch("building", seq=2), Epoch("building", seq=3)], 0, [0, 1], 0, id="building"
        ),
        pytest.param([], 2, [0, 1], 0, id="rebuilt while reading"),
        pytest.param([], 0, [], 0, id="still"),
    ],
)
async def test_the_store_is_read_again_until_its_seq_held_still(
    epochs: list[Epoch], lost: int, pauses: list[int], atomic: int
) -> None:
    async with held(documents_of(small_cluster())) as cluster:
        real = cluster.store.client()
        want = await from_store(real)
        paused: list[int] = []

        async def pause(attempt: int) -> None:
            paused.append(attempt)

        store = MovingStore(real, epochs, lost)
        taken = await from_store(store, pause=pause)  # type: ignore[arg-type]
    assert paused == pauses
    assert store.atomic == atomic
    assert taken.seq == want.seq > 0
    assert snapshot_text(taken) == snapshot_text(want)


async def test_a_busy_store_is_read_in_one_atomic_step() -> None:
    """Batches applied between every two reads (a busy cluster): the optimistic read
    never holds still, so every kind and the seq are read in one step instead."""
    async with held(documents_of(small_cluster())) as cluster:
        real = cluster.store.client()
        want = await from_store(real)
        moving = [live(seq) for seq in range(1, 2 * ATTEMPTS + 1)]
        store = MovingStore(real, moving)
        taken = await from_store(store)  # type: ignore[arg-type]
    assert store.atomic == 1
    assert (taken.seq, snapshot_text(taken)) == (want.seq, snapshot_text(want))


async def test_a_store_that_is_never_live_is_a_timeout_naming_the_fix() -> None:
    paused: list[int] = []

    async def pause(attempt: int) -> None:
        paused.append(attempt)

    async with held(documents_of(small_cluster())) as cluster:
        building = [Epoch("building", seq=seq) for seq in range(1, ATTEMPTS + 1)]
        store = MovingStore(cluster.store.client(), building)
        with pytest.raises(TimeoutError) as raised:
            await from_store(store, pause=pause)  # type: ignore[arg-type]
    assert paused == list(range(ATTEMPTS - 1))
    assert store.atomic == 0
    assert str(raised.value) == (
        f"no consistent read of the store in {ATTEMPTS} attempts (last: it is building: the "
        "informer is rebuilding it); try again, or read the event log with --event-log"
    )


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and not captured.out, captured
    return lines[0]


def test_an_output_file_in_a_missing_directory_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "nowhere" / "snap.yaml"
    assert main(["snapshot", "-o", str(target), "--redis-url", "redis://127.0.0.1:1/0"]) == 2
    assert one_line(capsys) == (
        f"ksched snapshot: cannot open {target}: no directory {target.parent}"
    )


@pytest.mark.parametrize("word", ["json", "yaml", "wide"])
def test_a_format_given_to_o_is_one_line_and_exit_2_and_writes_nothing(
    word: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["snapshot", "-o", word, "--redis-url", "redis://127.0.0.1:1/0"]) == 2
    assert one_line(capsys) == (
        f"ksched snapshot: -o {word}: snapshot's -o names the file to write (the snapshot "
        "is a YAML List, as kubectl get -o yaml prints it); for a file of that name, "
        f"give -o ./{word}"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_file_named_like_a_format_is_written_when_given_as_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.jsonl").write_text("")
    assert main(["snapshot", "-o", "./json", "--event-log", "empty.jsonl"]) == 0
    assert capsys.readouterr().err.startswith("ksched snapshot: warning: event log")
    assert (tmp_path / "json").read_text().startswith("apiVersion: v1")


def test_a_missing_event_log_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "missing.jsonl"
    assert main(["snapshot", "--event-log", str(log)]) == 2
    assert one_line(capsys) == f"ksched snapshot: cannot open {log}: No such file or directory"
    assert not log.exists()


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(lambda p: p.mkdir(), "Is a directory", id="a directory"),
        pytest.param(os.mkfifo, NOT_A_FILE, id="a named pipe (as /dev/null is a device)"),
    ],
)
def test_an_event_log_that_is_not_a_file_says_what_it_is(
    make: Callable[[Path], None],
    reason: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = tmp_path / "log"
    make(log)
    assert main(["snapshot", "--event-log", str(log)]) == 2
    assert one_line(capsys) == f"ksched snapshot: cannot open {log}: {reason}"


@pytest.mark.timeout(30)
def test_redis_down_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--redis-url", "redis://127.0.0.1:1/0"]) == 3
    assert one_line(capsys).startswith(
        "ksched snapshot: cannot connect to Redis at redis://127.0.0.1:1/0: connection refused"
    )


def test_the_file_of_a_recorded_run_feeds_simulate_capacity_and_deschedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(small_cluster()))
    log, snap = tmp_path / "run.jsonl", tmp_path / "snap.yaml"
    assert main(["simulate", str(cluster), "--seed", str(SEED), "--record", str(log)]) == 0
    capsys.readouterr()
    assert main(["snapshot", "--event-log", str(log), "-o", str(snap)]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "ksched snapshot: snapshot of the event log at seq "
        f"{yaml.safe_load(snap.read_text())['metadata']['annotations'][SEQ_ANNOTATION]}: "
        "3 nodes, 8 pods (8 bound, 0 pending), 0 other objects"
    ]
    assert stat.S_IMODE(os.stat(snap).st_mode) == 0o600
    assert main(["snapshot", "--event-log", str(log), "-o", "-"]) == 0
    assert capsys.readouterr().out == snap.read_text()
    assert main(["simulate", str(snap), "-o", "json"]) == 0
    assert capsys.readouterr().out == ""  # every pod is bound: nothing to decide
    template = tmp_path / "pod.yaml"
    template.write_text(yaml.safe_dump(small_cluster()[-1]))
    assert main(["capacity", str(snap), "--pod", str(template), "-o", "json"]) == 0
    assert '"' in capsys.readouterr().out
    policy = ROOT / "ops" / "examples" / "descheduler-policy.yaml"
    argv = ["deschedule", str(snap), "--policy", str(policy), "--placement", "-o", "json"]
    assert main(argv) == 0


def test_an_empty_store_is_an_empty_list_and_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--redis-url", "memory://", "-o", "-"]) == 0
    captured = capsys.readouterr()
    listed = yaml.safe_load(captured.out)
    assert listed["items"] == []
    assert listed["metadata"]["annotations"][SEQ_ANNOTATION] == "0"
    assert captured.err.splitlines() == [
        "ksched snapshot: warning: the store holds no cluster (no informer has run, or it "
        "was emptied): the List is empty",
        "ksched snapshot: snapshot of the store at seq 0: 0 nodes, 0 pods (0 bound, 0 "
        "pending), 0 other objects",
    ]
