"""``ksched simulate CLUSTER.yaml``: schedule the pending pods of a cluster snapshot on
the embedded pipeline and print the decisions.

Nodes and bound pods of the file are the cluster; every pending pod is in the queue
before the first attempt, so the queue's order (priority, then file order) decides.
The run always ends: once no pending pod can make progress (cli.progress), what is
left stays unscheduled, and a decision is a result, not an error (exit code 0).

Output: ``json`` prints every decision as it is made, one line each (a pod attempted
again after a change prints each attempt); ``table`` prints each pod once with its last
decision (its Binding, or for a pod left pending its last FailedScheduling and the
attempts it took), then one line per preemption, then how many pods were bound and how
many were not. A pod the run ends with held back at PreEnqueue (scheduling gates, a
gang short of its quorum) is reported last as ``NotReadyForScheduling`` with the plugin
and its message (json: ``{"kind", "pod", "plugin", "message"}``; table: a row, counted
apart as not ready for scheduling), whatever the delay of the ``status.<namespace>``
patch the live queue would publish (see EmbeddedCluster.report_held_back). A pod
bound with DRA claims DynamicResources allocated is preceded by one ``ClaimAllocation``
per claim (json: ``{"kind", "claim", "pod", "podClaim", "node", "results": [{"request",
"driver", "pool", "device"}]}``; table: a row before the pod's Binding row); the claim's
update is applied as the API server would (cli.claims). With
``explain`` every decision carries the scheduler's explanation (framework.explain),
which the table output renders for each pod's last decision (cli.explain_table).

Traces: the run's spans go where the ``OTEL_*`` variables say (services.common.telemetry);
with ``--trace`` they are also printed on stderr after the run, one line per span
(telemetry.span_line), grouped by trace: a pod's trace (its ingest, each attempt's
queue pop, scheduling cycle and binding cycle) under a heading naming the pod, each span
indented under its parent; the bus's batch spans (``publish``/``process``) in traces of
their own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.cli import explain_table
from services.cli.claims import CLAIM_ALLOCATION
from services.cli.embedded import NOT_READY, PREEMPTION, DecisionRecord, EmbeddedCluster
from services.cli.manifests import Document, check, read_documents
from services.common import telemetry
from services.common.clock import FakeClock
from services.common.eventlog import EventLog
from services.framework.config import Profile

# Objects others refer to go first, so a pod bound to a node never precedes the node.
_FIRST: tuple[str, ...] = ("namespace", "priorityclass", "storageclass", "persistentvolume")
_FIRST += ("persistentvolumeclaim", "node", "deviceclass", "resourceslice", "resourceclaimtemplate")
_FIRST += ("resourceclaim",)


def _rank(kind: str) -> int:
    if kind in _FIRST:
        return _FIRST.index(kind)
    return len(_FIRST) + (kind == "pod")


def load_cluster(text: str, source: str) -> list[Document]:
    """The file's documents, validated (ManifestError on the first bad one), in the
    order they are published: referenced kinds first, file order within a kind."""
    documents = read_documents(text, source=source)
    for document in documents:
        check(document, source=source)
    return sorted(documents, key=lambda d: (_rank(d.kind), d.index))


def load_clusters(files: Sequence[tuple[str, str]]) -> list[Document]:
    """The documents of several files (``(text, source)`` each), as :func:`load_cluster`
    orders one file's: referenced kinds first, then by file and position in the file
    (a later file's pending pods queue after an earlier one's of equal priority)."""
    documents: list[Document] = []
    for text, source in files:
        offset = len(documents)
        documents += [
            dataclasses.replace(d, index=offset + d.index) for d in load_cluster(text, source)
        ]
    return sorted(documents, key=lambda d: (_rank(d.kind), d.index))


async def simulate(
    documents: Sequence[Document],
    *,
    seed: int | None,
    profiles: Sequence[Profile] | None = None,
    event_log: EventLog | None = None,
    on_decision: Callable[[DecisionRecord], None] | None = None,
    explain: bool = False,
) -> list[DecisionRecord]:
    cluster = EmbeddedCluster(
        clock=FakeClock(),
        seed=seed,
        profiles=profiles,
        event_log=event_log,
        on_decision=on_decision,
        explain=explain,
    )
    await cluster.start()
    try:
        await cluster.publish_and_schedule(documents)
        cluster.report_held_back()
    finally:
        await cluster.stop()
    return cluster.decisions


@contextlib.contextmanager
def tracing(settings: telemetry.TraceSettings, out: TextIO | None = None) -> Iterator[None]:
    """Trace the run in this block as ``settings`` say; with ``out``, print every span
    there once the block ends (:func:`print_traces`). Exported spans are flushed then."""
    collected = InMemorySpanExporter() if out is not None else None
    processors = [SimpleSpanProcessor(collected)] if collected is not None else []
    provider = telemetry.configure("simulate", settings, processors=processors)
    try:
        yield
    finally:
        if provider is not None:
            provider.shutdown()
        if collected is not None and out is not None:
            print_traces(collected.get_finished_spans(), out)


def print_traces(spans: Sequence[ReadableSpan], out: TextIO) -> None:
    """``spans`` grouped by trace, the traces in the order they started: a heading
    (``trace <id>``, and the pod and attempts its spans name), then each span's line
    indented under its parent's, siblings in the order they started."""
    traces: dict[int, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        assert span.context is not None
        traces.setdefault(span.context.trace_id, []).append(span)
    for trace_id, members in traces.items():
        ids = {s.context.span_id for s in members if s.context is not None}
        children: dict[int | None, list[ReadableSpan]] = {}
        for span in members:
            parent = span.parent.span_id if span.parent is not None else None
            children.setdefault(parent if parent in ids else None, []).append(span)
        heading = f"trace {trace_id:032x}"
        if pods := _values(members, "ksched.pod"):
            heading += f": pod {', '.join(pods)}"
        if attempts := _values(members, "ksched.attempt"):
            heading += f", attempt {', '.join(attempts)}"
        out.write(heading + "\n")
        _write_tree(children, None, 1, out)
    out.flush()


def _write_tree(
    children: dict[int | None, list[ReadableSpan]], parent: int | None, depth: int, out: TextIO
) -> None:
    for span in children.get(parent, ()):
        out.write("  " * depth + telemetry.span_line(span) + "\n")
        assert span.context is not None
        _write_tree(children, span.context.span_id, depth + 1, out)


def _values(spans: Sequence[ReadableSpan], key: str) -> list[str]:
    """The values of attribute ``key`` among ``spans``, once each, sorted."""
    found = {str(s.attributes[key]) for s in spans if s.attributes and key in s.attributes}
    return sorted(found, key=lambda v: (len(v), v))


def print_json(record: DecisionRecord, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    out.write(json.dumps(record.to_json()) + "\n")
    out.flush()


def last_decisions(records: Sequence[DecisionRecord]) -> list[DecisionRecord]:
    """Each pod's last decision (a Binding or a FailedScheduling; preemptions and
    claim allocations are listed apart), in the order those were made."""
    last = {
        r.pod: (i, r) for i, r in enumerate(records) if r.kind not in (PREEMPTION, CLAIM_ALLOCATION)
    }
    return [r for _, r in sorted(last.values(), key=lambda item: item[0])]


def _claim_cell(record: DecisionRecord) -> str:
    """A ClaimAllocation's NODE / MESSAGE cell: ``node: claim (podClaim) request=device``."""
    devices = " ".join(
        f"{r['request']}={r['driver']}/{r['pool']}/{r['device']}" for r in record.results
    )
    return f"{record.node}: {record.claim} ({record.pod_claim or '-'}) {devices}".rstrip()


def print_table(records: Sequence[DecisionRecord], out: TextIO | None = None) -> None:
    """Each pod's last decision as a table, then the counts of bound and unscheduled
    pods; first, for each explained decision of the table and each attempt that
    preempted, its explanation."""
    out = out or sys.stdout
    preemptions = [r for r in records if r.kind == PREEMPTION]
    preempting = {(r.pod, r.attempts) for r in preemptions}
    for r in records:  # the attempts that preempted, explained
        if r.explain is not None and r.kind != PREEMPTION and (r.pod, r.attempts) in preempting:
            print_explanation(r, out)
    allocated: dict[str, list[DecisionRecord]] = {}
    for r in records:
        if r.kind == CLAIM_ALLOCATION:
            allocated.setdefault(r.pod, []).append(r)
    records = last_decisions(records)
    for r in records:
        if r.explain is not None:
            print_explanation(r, out)
    rows = [("DECISION", "POD", "NODE / MESSAGE", "ATTEMPTS")]
    for r in records:
        if r.kind == "Binding":  # its claims' allocations first, as in decision order
            claimed = allocated.get(r.pod, [])
            rows += [(c.kind, c.pod, _claim_cell(c), str(c.attempts)) for c in claimed]
        said = f"{r.message} ({r.plugin})" if r.kind == NOT_READY else r.message
        rows.append((r.kind, r.pod, r.node or said or "", str(r.attempts)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        out.write("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])))
        out.write(f"  {row[3]}\n")
    if preemptions:
        out.write("\n")
    for r in preemptions:
        victims = ", ".join(r.victims)
        out.write(f"preemption: {r.pod} nominated to {r.node}, victims {victims}")
        out.write(f" (attempt {r.attempts})\n")
    bound = sum(1 for r in records if r.kind == "Binding")
    held = sum(1 for r in records if r.kind == NOT_READY)
    out.write(f"\n{bound} bound, {len(records) - bound - held} failed scheduling")
    out.write(f", {held} not ready for scheduling\n" if held else "\n")


def print_explanation(record: DecisionRecord, out: TextIO | None = None) -> None:
    """One decision's heading and its explanation tables."""
    out = out or sys.stdout
    outcome = f" → {record.node}" if record.node else f": {record.message}"
    out.write(f"== {record.kind} {record.pod}{outcome} (attempt {record.attempts})\n")
    if record.explain is not None:
        explain_table.render(record.explain, out, chosen=record.node)
    out.write("\n")
