"""Clusters and stores for the ``ksched snapshot`` tests: one valid object of every kind
(from the fuzzer's generator), a small cluster with bound and pending pods, the
embedded services holding them, and a store whose applied seq moves on cue."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from contracts.kinds import KINDS, KubeObject
from services.cli.embedded import EmbeddedCluster
from services.cli.manifests import Document, check, read_documents
from services.cli.snapshot import Taken, cluster_list, render
from services.common.clock import FakeClock
from services.common.eventlog.snapshot import KIND_ORDER
from services.common.store import Epoch, MemoryStore, StoreLost
from services.informer.validate import Accepted, validate
from tests.fuzz.events import generate

SEED = 1


def every_kind() -> list[Document]:
    """One valid ADDED-or-MODIFIED event of each kind ksched ingests (fixed seed)."""
    rng = random.Random(7)
    found: dict[str, Document] = {}
    index = 0
    while len(found) < len(KINDS):
        case = generate(rng, index, invalid_share=0.0)
        index += 1
        if case.kind not in found:
            found[case.kind] = Document(len(found) + 1, case.kind, case.body, case.routing_key)
    return list(found.values())


def accepted(documents: Sequence[Document]) -> dict[tuple[str, str], KubeObject]:
    """The objects the informer accepts from ``documents``, by (kind, key)."""
    out: dict[tuple[str, str], KubeObject] = {}
    for document in documents:
        result = validate(document.body, document.routing_key)
        assert isinstance(result, Accepted), result
        out[result.kind, result.key] = result.object
    return out


def read_back(text: str) -> dict[tuple[str, str], KubeObject]:
    """What ``simulate`` reads from a snapshot's text, by (kind, key)."""
    return {
        (result.kind, result.key): result.object
        for result in (check(d) for d in read_documents(text, source="snap.yaml"))
    }


def snapshot_text(taken: Taken) -> str:
    return render(cluster_list(taken))


def node(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str, node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "demo", "uid": f"uid-{name}"},
        "spec": spec,
    }


def small_cluster() -> list[dict[str, Any]]:
    """Three nodes of different sizes, three bound pods, five pending ones."""
    return [
        node("big", "8"),
        node("mid", "4"),
        node("small", "2"),
        pod("bound-1", "3", "big"),
        pod("bound-2", "1", "mid"),
        pod("bound-3", "1500m", "small"),
        *(pod(f"pending-{i}", cpu) for i, cpu in enumerate(("2", "1", "500m", "3", "250m"))),
    ]


def documents_of(objects: Sequence[dict[str, Any]]) -> list[Document]:
    text = msgspec.json.encode({"apiVersion": "v1", "kind": "List", "items": objects}).decode()
    return read_documents(text, source="cluster")


@asynccontextmanager
async def held(documents: Sequence[Document]) -> AsyncIterator[EmbeddedCluster]:
    """The embedded services holding ``documents`` with the queue held: the informer
    and the store have them, no pod was attempted yet."""
    cluster = EmbeddedCluster(clock=FakeClock(), seed=SEED)
    await cluster.start()
    try:
        cluster.hold()
        await cluster.publish(documents)
        await cluster.settle()
        yield cluster
    finally:
        await cluster.stop()


def bindings(records: Sequence[Any]) -> dict[str, str]:
    return {r.pod: r.node for r in records if r.kind == "Binding"}


class MovingStore:
    """A store in front of a real one: ``epoch`` answers from ``epochs`` first, then
    as the real one; the reads of the first ``lost`` attempts raise StoreLost (a
    rebuild while they read)."""

    def __init__(self, store: MemoryStore, epochs: Sequence[Epoch], lost: int = 0) -> None:
        self.store, self.epochs, self.lost = store, list(epochs), lost
        self.atomic = 0
        """Reads of every kind in one step (``objects_at``)."""

    async def epoch(self) -> Epoch:
        if self.epochs:
            return self.epochs.pop(0)
        return await self.store.epoch()

    async def attach(self) -> Epoch:
        return await self.store.attach()

    async def objects(self, kind: str) -> dict[str, bytes]:
        if self.lost and kind == KIND_ORDER[0]:  # once per attempt
            self.lost -= 1
            raise StoreLost("rebuilt")
        return await self.store.objects(kind)

    async def objects_at(self, kinds: Sequence[str]) -> tuple[int, dict[str, dict[str, bytes]]]:
        self.atomic += 1
        return await self.store.objects_at(kinds)
