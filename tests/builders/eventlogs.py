"""Event logs built directly, entry by entry, without the services: the churn of the
issue that made snapshots necessary (pods added, bound and deleted, round after round,
over a fixed set of nodes), for the rebuild-cost test and its benchmark."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from contracts.events import LogEntry, NodeEntry, PodEntry
from tests.builders import make_node, make_pod


def churn(nodes: int, rounds: int, pods: int) -> Iterator[list[LogEntry]]:
    """The log in batches: first the ``nodes`` nodes, then per round ``pods`` pods
    ADDED, each bound to a node (a ``binding`` entry), then each DELETED. It holds
    ``nodes + 3 * rounds * pods`` entries; its live state at the end is the nodes."""
    names = [f"node-{i}" for i in range(nodes)]
    seq = 0

    def numbered() -> int:
        nonlocal seq
        seq += 1
        return seq

    yield [
        NodeEntry(
            seq=numbered(),
            type="ADDED",
            object=make_node(name, allocatable={"cpu": "64", "memory": "256Gi", "pods": 500}),
        )
        for name in names
    ]
    for r in range(rounds):
        added = [
            make_pod(f"churn-{r}-{i}", uid=f"uid-{r}-{i}", requests={"cpu": "100m"})
            for i in range(pods)
        ]
        yield [PodEntry(seq=numbered(), type="ADDED", object=pod) for pod in added]
        bound = [
            msgspec.structs.replace(
                pod, spec=msgspec.structs.replace(pod.spec, node_name=names[i % nodes])
            )
            for i, pod in enumerate(added)
        ]
        yield [
            PodEntry(seq=numbered(), type="MODIFIED", origin="binding", object=pod) for pod in bound
        ]
        yield [PodEntry(seq=numbered(), type="DELETED", object=pod) for pod in bound]
