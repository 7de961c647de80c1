"""``ksched deschedule CLUSTER.yaml --policy POLICY.yaml``: one descheduling cycle over a
cluster file, with the code the descheduler service runs, and optionally where the
evicted pods would land (``--placement``).

Output ``json``: one line per eviction, in eviction order,
``{"kind": "Eviction", "pod": "NS/NAME", "node": "NODE", "profile": "P", "plugin": "X",
"reason": "..."}``; then one line per pod the evictor refused and that stayed,
``{"kind": "NotEvicted", "pod": "NS/NAME", "node": "NODE", "reasons": ["..."]}`` (the
evictor's and DefaultEvictor's reasons in upstream's words); with ``--placement`` then
one ``Placement`` (or ``FailedScheduling``) line per evicted pod. ``table``: the
evictions, the placements, and a summary that counts the refused pods by reason
(``-v`` lists each one).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

import msgspec

from contracts.k8s import (
    DeviceClass,
    Namespace,
    Node,
    NodeMetrics,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodMetrics,
    PriorityClass,
    ResourceClaim,
    ResourceSlice,
)
from contracts.kinds import KINDS
from services.cli.errors import InputError
from services.cli.manifests import Document
from services.common.k8s.timestamps import parse_time
from services.descheduler.api import ClusterView, PrometheusUsage
from services.descheduler.evictions import Evicted, NotEvicted
from services.descheduler.nodefit import SchedulerFit
from services.descheduler.podutil import key
from services.descheduler.policy import load_policy
from services.descheduler.profile import CycleResult, check_node_fit_profiles, run_cycle
from services.descheduler.prometheus import prometheus_usage
from services.descheduler.registry import in_tree_registry
from services.descheduler.usage import NodeUsageCollector
from services.framework.api.types import PodInfo
from services.framework.config import Profile
from services.framework.runtime.framework import Framework
from services.informer.validate import default_uid


def cluster_view(
    documents: Sequence[Document],
    now: float,
    collect_metrics: bool = True,
    prometheus: Mapping[str, PrometheusUsage] | None = None,
) -> ClusterView:
    """The cluster file's objects as one cycle sees them (deleted ones left out), with
    the answers of the policy's Prometheus queries."""
    nodes: list[Node] = []
    pods: list[Pod] = []
    namespaces: dict[str, Namespace] = {}
    pdbs: list[PodDisruptionBudget] = []
    claims: dict[tuple[str, str], PersistentVolumeClaim] = {}
    classes: dict[str, PriorityClass] = {}
    node_metrics: list[NodeMetrics] = []
    pod_metrics: dict[tuple[str, str], PodMetrics] = {}
    dra: list[object] = []
    for document in documents:
        event = json.loads(document.body)
        if event.get("type") == "DELETED" or document.kind not in KINDS:
            continue
        obj = msgspec.convert(event["object"], KINDS[document.kind], strict=False)
        if not obj.metadata.uid:  # as the informer gives one, so simulate sees the same
            meta = msgspec.structs.replace(
                obj.metadata, uid=default_uid(document.kind, obj.metadata)
            )
            obj = msgspec.structs.replace(obj, metadata=meta)
        match obj:
            case Node():
                nodes.append(obj)
            case Pod():
                pods.append(obj)
            case Namespace():
                namespaces[obj.metadata.name] = obj
            case PodDisruptionBudget():
                pdbs.append(obj)
            case PersistentVolumeClaim():
                claims[(obj.metadata.namespace or "default", obj.metadata.name)] = obj
            case PriorityClass():
                classes[obj.metadata.name] = obj
            case NodeMetrics():
                node_metrics.append(obj)
            case PodMetrics():
                pod_metrics[(obj.metadata.namespace or "default", obj.metadata.name)] = obj
            case DeviceClass() | ResourceSlice() | ResourceClaim():
                dra.append(obj)
    pods = [_admitted(p, classes) for p in pods]
    collector = NodeUsageCollector()
    for error in collector.collect(node_metrics):
        print(f"warning: {error}", file=sys.stderr)
    usage = collector.usage() if collect_metrics else None
    return ClusterView(
        nodes, pods, now, namespaces, pdbs, claims, classes, usage, pod_metrics, dra, prometheus
    )


def _admitted(pod: Pod, classes: dict[str, PriorityClass]) -> Pod:
    """``spec.priority`` from a known ``priorityClassName``, as admission sets it."""
    name = pod.spec.priority_class_name
    if pod.spec.priority is not None or not name or name not in classes:
        return pod
    spec = msgspec.structs.replace(pod.spec, priority=classes[name].value)
    return msgspec.structs.replace(pod, spec=spec)


def parse_now(text: str | None) -> float:
    """``--now`` (RFC 3339), else the wall clock."""
    if text is None:
        return datetime.now().timestamp()
    now = parse_time(text)
    if now is None:
        raise InputError(f'--now: "{text}" is not an RFC 3339 time (2024-05-01T12:00:00Z)')
    return now


@dataclass(frozen=True, slots=True)
class Placement:
    pod: str
    node: str | None
    message: str = ""

    def to_json(self) -> dict[str, object]:
        if self.node is None:
            return {"kind": "FailedScheduling", "pod": self.pod, "message": self.message}
        return {"kind": "Placement", "pod": self.pod, "node": self.node}


def eviction_json(evicted: Evicted) -> dict[str, object]:
    return {
        "kind": "Eviction",
        "pod": key(evicted.pod),
        "node": evicted.node,
        "profile": evicted.options.profile,
        "plugin": evicted.options.plugin,
        "reason": evicted.reason,
    }


def not_evicted_json(refused: NotEvicted) -> dict[str, object]:
    return {
        "kind": "NotEvicted",
        "pod": key(refused.pod),
        "node": refused.node,
        "reasons": list(refused.reasons),
    }


def not_evicted_summary(refused: Sequence[NotEvicted], hint: str = "") -> str:
    """``2 pods not evicted: pod does not have any ownerRefs (2)``: each pod counted
    once, under its first reason, most frequent reason first."""
    counts: dict[str, int] = {}
    for r in refused:
        counts[r.reasons[0]] = counts.get(r.reasons[0], 0) + 1
    by_count = sorted(counts.items(), key=lambda item: -item[1])
    reasons = "; ".join(f"{reason} ({n})" for reason, n in by_count)
    return f"{len(refused)} pod{'s' if len(refused) != 1 else ''} not evicted{hint}: {reasons}"


def place(
    cluster: ClusterView, evicted: Sequence[Evicted], profiles: Sequence[Profile] | None = None
) -> list[Placement]:
    """Recreate each evicted pod as its controller would (same spec, no node) and
    schedule them in eviction order on the cluster without them, each with the
    scheduler profile its ``schedulerName`` names (the first one otherwise)."""
    gone = {e.pod.metadata.uid for e in evicted}
    rest = ClusterView(
        cluster.nodes,
        [p for p in cluster.pods if p.metadata.uid not in gone],
        cluster.now,
        cluster.namespaces,
        cluster.pdbs,
        cluster.claims,
        cluster.priority_classes,
        dra=cluster.dra,
    )
    fit = SchedulerFit(rest, profiles)
    placements = []
    for e in evicted:
        pod = msgspec.structs.replace(
            e.pod,
            metadata=msgspec.structs.replace(e.pod.metadata, uid=e.pod.metadata.uid + "-new"),
            spec=msgspec.structs.replace(e.pod.spec, node_name=None),
            status=msgspec.structs.replace(e.pod.status, phase="Pending", nominated_node_name=None),
        )
        name = pod.spec.scheduler_name
        framework: Framework = fit.framework_of(name if name in fit.profile_names else None)
        result = framework.schedule_pod(fit.cache, PodInfo.of(pod))
        if result.node is None:
            placements.append(Placement(key(pod), None, result.message))
            continue
        bound = msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, node_name=result.node)
        )
        fit.cache.add_pod(bound)
        placements.append(Placement(key(pod), result.node))
    return placements


def print_table(
    evicted: Sequence[Evicted],
    result: CycleResult,
    placements: Sequence[Placement] | None,
    out: TextIO,
    refused: Sequence[NotEvicted] = (),
    verbose: bool = False,
) -> None:
    if result.skipped:
        out.write(result.skipped + "\n")
    for name, plugin in result.plugins.items():
        classified = getattr(plugin, "classified", None)
        if classified:
            print_utilization(name, plugin, out)
    rows = [("EVICTED", "NODE", "PROFILE", "PLUGIN")]
    rows += [(key(e.pod), e.node, e.options.profile, e.options.plugin) for e in evicted]
    if evicted:
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for row in rows:
            out.write(
                "  ".join(c.ljust(widths[i]) for i, c in enumerate(row[:3])) + f"  {row[3]}\n"
            )
    if placements is not None:
        out.write("\n")
        for p in placements:
            out.write(f"{p.pod} → {p.node}\n" if p.node else f"{p.pod}: {p.message}\n")
    if refused and verbose:
        out.write("\n")
        print_refused(refused, out)
    for error in result.errors:
        out.write(f"error: {error}\n")
    out.write(f"\n{len(evicted)} evicted on {len(result.nodes)} nodes\n")
    if refused:
        hint = "" if verbose else " (-v lists them)"
        out.write(not_evicted_summary(refused, hint) + "\n")


def print_refused(refused: Sequence[NotEvicted], out: TextIO) -> None:
    """One row per refused pod, its reasons joined."""
    rows = [("NOT EVICTED", "NODE", "REASONS")]
    rows += [(key(r.pod), r.node, "; ".join(r.reasons)) for r in refused]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    for row in rows:
        out.write(f"{row[0].ljust(widths[0])}  {row[1].ljust(widths[1])}  {row[2]}\n")


def print_utilization(name: str, plugin: Any, out: TextIO) -> None:
    """How a utilization plugin classified each node, with its usage per resource (as
    a percentage of allocatable) against the thresholds."""
    args = plugin.args
    resources = list(args.thresholds)
    limits = ", ".join(
        f"{r} {args.thresholds[r]:g}%"
        + (f"/{args.target_thresholds[r]:g}%" if hasattr(args, "target_thresholds") else "")
        for r in resources
    )
    deviation = " (around the average)" if getattr(args, "use_deviation_thresholds", False) else ""
    out.write(f"{name}: thresholds {limits}{deviation}\n")
    rows = [["NODE", "CLASS", *(r.upper() for r in resources)]]
    for node, verdict in plugin.classified.items():
        usage = plugin.usage_percent.get(node, {})
        rows.append([node, verdict, *(f"{usage.get(r, 0.0):.0f}%" for r in resources)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    out.write("\n")


def deschedule_command(args: argparse.Namespace) -> int:
    from services.cli.commands import read_input
    from services.cli.runtime import load_profiles
    from services.cli.simulate import load_cluster

    policy = load_policy(args.policy, in_tree_registry())
    profiles = load_profiles(args.config)
    check_node_fit_profiles(policy, [p.scheduler_name for p in profiles])
    text, source = read_input(args.cluster)
    documents = load_cluster(text, source)
    prometheus, problem = prometheus_usage(policy, args.prometheus_token_file)
    if problem:
        print(f"warning: {problem}", file=sys.stderr)
    cluster = cluster_view(documents, parse_now(args.now), policy.collects_metrics, prometheus)
    evictor, result = run_cycle(
        policy, in_tree_registry(), cluster, SchedulerFit(cluster, profiles)
    )
    placements = place(cluster, evictor.evicted, profiles) if args.placement else None
    if args.output == "json":
        lines: list[dict[str, Any]] = [eviction_json(e) for e in evictor.evicted]
        lines += [not_evicted_json(r) for r in evictor.not_evicted]
        lines += [p.to_json() for p in placements or ()]
        for line in lines:
            print(json.dumps(line))
    else:
        verbose = bool(getattr(args, "verbose", False))
        print_table(evictor.evicted, result, placements, sys.stdout, evictor.not_evicted, verbose)
    for error in result.errors:
        print(f"ksched: {error}", file=sys.stderr)
    return 0


__all__ = [
    "cluster_view",
    "deschedule_command",
    "eviction_json",
    "not_evicted_json",
    "not_evicted_summary",
    "parse_now",
    "place",
]
