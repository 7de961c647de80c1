"""``ksched waiting``: the waiting pods from the store, as a table and as JSON."""

from __future__ import annotations

import io
import json

import pytest

from services.cli.waiting import show
from services.common.store import WaitingRecord
from services.common.store.memory import MemoryStore

NOW = 1_700_000_000.0


def record(name: str, pending: dict[str, float], state: str = "waiting") -> WaitingRecord:
    return WaitingRecord(
        uid=f"uid-{name}",
        namespace="team",
        name=name,
        node="n1",
        attempt=2,
        profile="default-scheduler",
        pending={p: NOW + left for p, left in pending.items()},
        waits={p: 60.0 for p in pending},
        request=b"{}",
    )


async def stored(*records: WaitingRecord) -> list[WaitingRecord]:
    store = MemoryStore()
    await store.put_waiting(records)
    return sorted((await store.waiting()).values(), key=lambda r: r.name)


async def test_table_lists_pods_with_the_time_each_plugin_has_left() -> None:
    records = await stored(
        record("b", {"ExternalPermit": 12.5, "Coscheduling": 3}),
        record("a", {"ExternalPermit": 59}),
    )
    out = io.StringIO()
    assert show(records, now=NOW, output="table", out=out) == 0
    assert out.getvalue().splitlines() == [
        "POD     NODE  PENDING                                  STATE",
        "team/a  n1    ExternalPermit=59.0s                     waiting",
        "team/b  n1    Coscheduling=3.0s, ExternalPermit=12.5s  waiting",
    ]


@pytest.mark.parametrize("output", ["table", "json"])
async def test_nothing_waiting(output: str) -> None:
    out = io.StringIO()
    assert show([], now=NOW, output=output, out=out) == 0
    assert out.getvalue() == ("[]\n" if output == "json" else "no pod is waiting at Permit\n")


async def test_json_has_deadlines_and_seconds_left() -> None:
    records = await stored(record("a", {"ExternalPermit": 1.5}))
    out = io.StringIO()
    show(records, now=NOW, output="json", out=out)
    (pod,) = json.loads(out.getvalue())
    assert pod["pod"] == "team/a" and pod["attempt"] == 2 and pod["state"] == "waiting"
    assert pod["pendingPlugins"] == [
        {"name": "ExternalPermit", "deadline": "2023-11-14T22:13:21.5Z", "secondsLeft": 1.5}
    ]


async def test_a_pod_waiting_at_prebind_shows_its_plugins_own_deadline() -> None:
    at_prebind = WaitingRecord(
        uid="uid-c",
        namespace="team",
        name="c",
        node="n1",
        attempt=1,
        profile="default-scheduler",
        pending={"DynamicResources": NOW + 610.0},  # the store's: 10 s of grace later
        waits={"DynamicResources": 600.0},
        request=b"{}",
        since=NOW - 100.0,
        point="PreBind",
    )
    records = await stored(at_prebind, record("a", {"ExternalPermit": 59}))
    out = io.StringIO()
    show(records, now=NOW, output="table", out=out)
    assert out.getvalue().splitlines()[2].split() == [
        "team/c",
        "n1",
        "DynamicResources@PreBind=500.0s",
        "waiting",
    ]
    out = io.StringIO()
    show(records, now=NOW, output="json", out=out)
    a, c = json.loads(out.getvalue())
    assert (a["at"], c["at"]) == ("Permit", "PreBind")
    assert c["pendingPlugins"][0]["secondsLeft"] == 500.0
