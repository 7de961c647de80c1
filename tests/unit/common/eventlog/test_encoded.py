"""Entries encoded once (services.common.eventlog.encoded): the line built around an
object's bytes is byte for byte what encoding the whole entry gives, for every field's
default and non-default value and for objects of several kinds; a batch body is the
``ClusterBatch`` encoding."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.events import ENTRY_FOR_KIND, ClusterBatch, LogEntry
from contracts.kinds import KubeObject, kind_of
from services.common.eventlog.encoded import batch_body, entry_line, entry_lines
from tests.builders import make_node, make_pod
from tests.builders.workloads import make_service

OBJECTS: list[KubeObject] = [
    make_pod("web", requests={"cpu": "500m"}, node_name="n1"),
    make_pod("pending", labels={"app": "web"}),
    make_node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110}),
    make_service("web", {"app": "web"}, "shop"),
]

FIELDS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "modified, traced, at a time": {
        "type": "MODIFIED",
        "at": 1764300000.25,
        "trace": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
    },
    "deleted by the controller": {"type": "DELETED", "origin": "controller"},
    "a binding": {"origin": "binding", "at": 3.0},
}


def entry(obj: KubeObject, seq: int, **fields: Any) -> LogEntry:
    cls: Any = ENTRY_FOR_KIND[kind_of(obj)]
    made: LogEntry = cls(seq=seq, type=fields.pop("type", "ADDED"), object=obj, **fields)
    return made


@pytest.mark.parametrize("fields", list(FIELDS.values()), ids=list(FIELDS))
@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: f"{kind_of(o)} {o.metadata.name}")
def test_a_line_is_the_entry_s_own_encoding(obj: KubeObject, fields: dict[str, Any]) -> None:
    event = entry(obj, 7, **fields)
    line = entry_line(event, msgspec.json.encode(event.object))
    assert line == msgspec.json.encode(event)
    assert msgspec.json.decode(line, type=LogEntry) == event


def test_a_batch_body_is_the_cluster_batch_s_encoding() -> None:
    events = [
        entry(obj, seq, **FIELDS["modified, traced, at a time"])
        for seq, obj in enumerate(OBJECTS, 1)
    ]
    lines = [entry_line(e, msgspec.json.encode(e.object)) for e in events]
    body = batch_body(lines)
    assert body == msgspec.json.encode(ClusterBatch(events=events))
    assert batch_body(entry_lines(events)) == body
    assert msgspec.json.decode(batch_body([]), type=ClusterBatch) == ClusterBatch(events=[])
