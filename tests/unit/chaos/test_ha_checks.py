"""The HA chaos run's own verdicts: the seqs the event log yields (each once: two
different entries with one seq are a second writer, the same entry twice a copy the log
should have skipped, a gap a lost entry) and the leases at the end (each role: exactly
one live leader of the run)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.chaos.__main__ import HA_SHORT_PODS, parse
from tests.chaos.ha_log import entries_in_order, leader_rows, seq_rows
from tests.chaos.ha_processes import expired


def entry(seq: int, name: str = "a") -> bytes:
    obj = {"metadata": {"uid": name, "name": name, "namespace": "ns"}}
    return json.dumps({"seq": seq, "type": "ADDED", "kind": "pod", "object": obj}).encode()


def lease(role: str, pid: int, expires_at: Any = 2e9) -> dict[str, Any]:
    return {"role": role, "holder": f"h{pid}", "host": "x", "pid": pid, "token": 1,
            "renewed_at": 1e9, "expires_at": expires_at}  # fmt: skip


def test_a_clean_stream_has_every_seq_once() -> None:
    ordered, conflicting, missing, again = entries_in_order([entry(2), entry(1), entry(3)])
    assert [json.loads(b)["seq"] for b in ordered] == [1, 2, 3]
    assert (conflicting, missing, again) == ([], [], 0)
    assert all(row.ok for row in seq_rows(conflicting, missing, again, None))


def test_an_entry_read_twice_is_a_violation_the_log_should_have_skipped() -> None:
    ordered, conflicting, missing, again = entries_in_order([entry(1), entry(2), entry(2)])
    assert len(ordered) == 2 and again == 1
    rows = seq_rows(conflicting, missing, again, None)
    assert [row.name for row in rows if not row.ok] == ["seqs read twice (log)"]


def test_a_log_that_cannot_be_read_to_its_end_is_a_violation() -> None:
    rows = seq_rows([], [], 0, "LogSequenceError: seq 7 follows 5")
    assert [row.ok for row in rows] == [True, True, True, False]


def test_two_writers_and_a_gap_are_violations() -> None:
    _, conflicting, missing, _ = entries_in_order(
        [entry(1), entry(2, "a"), entry(2, "b"), entry(4)]
    )
    assert conflicting == ["2"] and missing == ["3"]
    assert [row.ok for row in seq_rows(conflicting, missing, 0, None)] == [False, True, False, True]


@pytest.mark.parametrize(
    ("leases", "ok"),
    [
        ([lease("informer", 10)], True),
        ([], False),
        ([lease("informer", 10), lease("informer", 11)], False),
        ([lease("informer", 99)], False),  # not a replica of the run
        ([lease("informer", 10, expires_at=1.0)], False),  # expired
        ([lease("informer", 10, expires_at="2001-09-09T01:46:41Z")], True),  # 1 s after now
        ([lease("informer", 10, expires_at="2001-09-09T01:46:39Z")], False),  # 1 s before
    ],
)
def test_each_role_must_have_exactly_one_live_leader(
    leases: list[dict[str, Any]], ok: bool
) -> None:
    (row,) = leader_rows(leases, ["informer"], ours={10, 11}, now=1e9)
    assert row.ok is ok


def test_expiry_reads_epoch_seconds_and_iso_times() -> None:
    assert expired({"expires_at": 5.0}, now=6.0)
    assert not expired({"expires_at": "1970-01-01T00:00:10+00:00"}, now=6.0)
    assert expired({}, now=0.0)


def test_the_ha_mode_takes_its_own_faults_and_short_size(tmp_path: Any) -> None:
    options = parse(["--ha", "--short", "--workdir", str(tmp_path)])
    assert options.ha and options.pods == HA_SHORT_PODS
    assert "leader-kill" in options.faults and "broker" not in options.faults
    with pytest.raises(SystemExit):
        parse(["--ha", "--faults", "broker", "--workdir", str(tmp_path)])
