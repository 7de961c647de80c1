"""The ClusterStore contract for the workload kinds (Service, ReplicationController,
ReplicaSet, StatefulSet), as the informer projects their log entries, on both stores."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest

from contracts.events import ENTRY_FOR_KIND, LogEntry
from contracts.k8s import LabelSelector
from contracts.kinds import KubeObject, kind_of
from services.common.store import ClusterStore, ProjectedEntry
from services.informer.outputs import projected as _projected
from tests.builders.workloads import (
    make_replica_set,
    make_replication_controller,
    make_service,
    make_stateful_set,
)
from tests.contract.store_support import Clients


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[ClusterStore]:
    clients = Clients(request.param)
    try:
        yield clients.open()
    finally:
        await clients.teardown()


def entry(seq: int, obj: KubeObject, type_: str = "ADDED") -> ProjectedEntry:
    event: LogEntry = msgspec.convert(
        {"kind": kind_of(obj), "seq": seq, "type": type_, "object": msgspec.to_builtins(obj)},
        type=ENTRY_FOR_KIND[kind_of(obj)],
    )
    return _projected(event)


APP = LabelSelector(match_labels={"app": "web"})
OBJECTS = [
    pytest.param(
        make_service("web", {"app": "web"}, "shop"),
        make_service("web", {}, "shop"),
        id="service",
    ),
    pytest.param(
        make_replication_controller("web", {"app": "web"}, "shop"),
        make_replication_controller("web", None, "shop"),
        id="replicationcontroller",
    ),
    pytest.param(
        make_replica_set("web", APP, "shop"),
        make_replica_set("web", LabelSelector(), "shop"),
        id="replicaset",
    ),
    pytest.param(
        make_stateful_set("web", APP, "shop"),
        make_stateful_set("web", None, "shop"),
        id="statefulset",
    ),
]


@pytest.mark.parametrize(("added", "modified"), OBJECTS)
async def test_workload_objects_are_stored_updated_and_deleted(store, added, modified):
    kind = kind_of(added)
    decoder = msgspec.json.Decoder(type(added))
    await store.apply([entry(1, added)])
    assert {k: decoder.decode(v) for k, v in (await store.objects(kind)).items()} == {
        "shop/web": added
    }
    await store.apply([entry(2, modified, "MODIFIED")])
    stored = decoder.decode((await store.objects(kind))["shop/web"])
    assert stored == modified
    assert stored.spec.selector == modified.spec.selector  # {} and unset stay apart
    await store.apply([entry(3, modified, "DELETED")])
    assert await store.objects(kind) == {}
    assert await store.applied_seq() == 3
    assert await store.node_usage() == {}
