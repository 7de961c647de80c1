"""``ksched replay LOG``: feed a recorded event log through the embedded pipeline and
compare the decisions with the recorded ones.

The user entries of the log (and those of ksched's resourceclaim controller: the claims
it generated, with their names, so none is generated again) are fed back in lockstep
with the recorded bindings: the entries up to a recorded binding are ingested (the
queue held, as ``simulate`` does), then the pipeline runs until it settles. A run of the
embedded mode (``simulate --record``) is reproduced exactly with the same seed; a run of
the services is reproduced up to the snapshot lag the live schedulers had.

A log with a snapshot (:mod:`services.common.eventlog.snapshot`) is replayed from its
newest one: the cluster as it was at the snapshot's seq (every live object, bound pods
on their nodes) is ingested first, then the entries after it as above. So a replay
from a snapshot reproduces the decisions of the tail, the entries after the snapshot,
and ``--check`` compares the bindings recorded in the tail with those replayed (the
pods bound before the snapshot are part of the starting cluster, not decisions).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from contracts import topology
from contracts.events import LogEntry, PodEntry
from contracts.k8s import namespaced_name
from services.cli.embedded import DecisionRecord, EmbeddedCluster
from services.cli.manifests import Document
from services.common.clock import FakeClock
from services.common.eventlog.snapshot import Snapshot
from services.framework.config import Profile


@dataclass(frozen=True, slots=True)
class ReplayResult:
    decisions: list[DecisionRecord]
    recorded: dict[str, str]
    """pod → node, from the log's binding entries."""
    snapshot: int = 0
    """The seq of the snapshot the replay started from (0: the log's first entry)."""

    @property
    def replayed(self) -> dict[str, str]:
        return {d.pod: d.node for d in self.decisions if d.kind == "Binding" and d.node}

    @property
    def mismatches(self) -> list[str]:
        replayed = self.replayed
        pods = sorted(set(replayed) | set(self.recorded))
        return [
            f"{pod}: recorded {self.recorded.get(pod, '-')}, replayed {replayed.get(pod, '-')}"
            for pod in pods
            if replayed.get(pod) != self.recorded.get(pod)
        ]


def segments(events: Iterable[LogEntry]) -> tuple[list[list[Document]], dict[str, str]]:
    """User entries split at each recorded binding, and the recorded bindings."""
    out: list[list[Document]] = [[]]
    recorded: dict[str, str] = {}
    for event in events:
        if event.origin == "binding":
            assert isinstance(event, PodEntry)
            recorded[namespaced_name(event.object.metadata)] = event.object.spec.node_name or ""
            if out[-1]:
                out.append([])
            continue
        kind = str(event.__struct_config__.tag)
        body = msgspec.json.encode({"type": event.type, "object": event.object})
        out[-1].append(Document(event.seq, kind, body, topology.event_key(kind, event.type)))
    return [segment for segment in out if segment], recorded


async def replay(
    events: Iterable[LogEntry],
    *,
    seed: int | None,
    profiles: Sequence[Profile] | None = None,
    snapshot: Snapshot | None = None,
) -> ReplayResult:
    """Replay ``events``, after the cluster of ``snapshot`` if given (``events`` are
    then the entries after it)."""
    if snapshot is not None:
        events = itertools.chain(snapshot.entries, events)
    parts, recorded = segments(events)
    cluster = EmbeddedCluster(
        clock=FakeClock(), seed=seed, profiles=profiles, generate_claims=False
    )
    await cluster.start()
    try:
        for part in parts:
            await cluster.publish_and_schedule(part)
        cluster.report_held_back()  # as simulate ends
    finally:
        await cluster.stop()
    return ReplayResult(cluster.decisions, recorded, snapshot.seq if snapshot else 0)


def summary(result: ReplayResult) -> Sequence[str]:
    lines = [f"replayed {len(result.replayed)} bindings; the log recorded {len(result.recorded)}"]
    if result.snapshot:
        lines[0] += f" after its snapshot at seq {result.snapshot}"
    mismatches = result.mismatches
    lines.append("all match" if not mismatches else f"{len(mismatches)} differ:")
    lines.extend(f"  {m}" for m in mismatches[:50])
    return lines
