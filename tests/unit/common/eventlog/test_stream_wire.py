"""Which entries of a stream count: the claim in force at each offset, once per seq."""

from __future__ import annotations

import pytest

from services.common.eventlog.base import LogSequenceError
from services.common.eventlog.stream_wire import (
    ENTRY,
    FENCE_MARK,
    Claim,
    Owners,
    Reading,
    Record,
)

OWNERS = Owners([Claim(1, "a", 0), Claim(2, "b", 10), Claim(2, "c", 20), Claim(1, "a", 30)])
"""a holds token 1 from offset 0, b token 2 from 10, c (b restarted) from 20; a's late
claim with token 1 at 30 changes nothing."""


def entry(offset: int, seq: int, fence: int, writer: str, last: int = 0) -> Record:
    """A batch of seqs ``seq..last`` (just ``seq`` by default)."""
    return Record(offset=offset, kind=ENTRY, seq=seq, last=last or seq, fence=fence, writer=writer)


@pytest.mark.parametrize(
    ("offset", "owner"),
    [(0, None), (1, "a"), (10, "a"), (11, "b"), (21, "c"), (31, "c")],
)
def test_the_owner_at_an_offset(offset: int, owner: str | None) -> None:
    found = OWNERS.owner_at(offset)
    assert (found.writer if found else None) == owner


def test_reading_keeps_what_counts_once_per_seq() -> None:
    records = [
        entry(1, 1, 1, "a"),
        entry(2, 2, 1, "a"),
        entry(3, 2, 1, "a"),  # a retried append: seq 2 again
        Record(offset=10, kind=FENCE_MARK, fence=2, writer="b"),
        entry(11, 3, 1, "a"),  # the deposed writer, after b's claim
        entry(12, 3, 2, "b"),
        entry(13, 4, 1, "a"),
        entry(14, 4, 2, "b"),
    ]
    reading = Reading(OWNERS, 0, "stream://t")
    assert [r.seq for r in records if reading.accept(r)] == [1, 2, 3, 4]
    assert reading.last == 4
    later = Reading(OWNERS, 2, "stream://t")
    assert [r.offset for r in records if later.accept(r)] == [12, 14]


def test_a_batch_overlapping_what_was_read_is_read_for_its_new_entries() -> None:
    reading = Reading(OWNERS, 0, "stream://t")
    batches = [entry(11, 1, 2, "b", 3), entry(12, 2, 2, "b", 5), entry(13, 4, 2, "b", 5)]
    assert [reading.accept(r) for r in batches] == [True, True, False]
    assert reading.last == 5


@pytest.mark.parametrize("last", [0, 7], ids=["from-the-start", "from-the-middle"])
def test_a_trimmed_head_is_read_from_its_first_entry(last: int) -> None:
    reading = Reading(OWNERS, last, "stream://t")
    assert reading.accept(entry(12, 9, 2, "b"))
    assert reading.last == 9


def test_a_gap_after_the_first_entry_is_an_error() -> None:
    reading = Reading(OWNERS, 0, "stream://t")
    assert reading.accept(entry(12, 1, 2, "b"))
    with pytest.raises(LogSequenceError, match=r"offset 13.*seq 3 follows 1"):
        reading.accept(entry(13, 3, 2, "b"))
