"""``ksched capacity CLUSTER --pod POD.yaml``: how many more copies of one pod the
cluster can schedule, as kubernetes-sigs/cluster-capacity answers it, on the embedded
pipeline (the scheduler's own decisions, not an estimate).

The cluster file is loaded as ``simulate`` loads it, and its pending pods are scheduled
first (they are ahead of the copies in any real queue). Then copies of the pod are
published one at a time, each after the previous one's decision: a bound copy stays,
so it counts against the cluster for the next. The run ends at the first copy that is
not bound (its FailedScheduling, or its NotReadyForScheduling when PreEnqueue holds it
back), or once ``--max-limit`` copies are bound (``LimitReached``, cluster-capacity's
words). Preemption is not simulated: a copy that could only be placed by preempting
has failed, and nothing already in the cluster is evicted.

Copy ``i`` (from 0) is named ``<name>-<i>`` in the pod's namespace, as cluster-capacity
names them; it loses the template's ``uid`` and ``nodeName`` and asks for the
scheduler's explanation (``ksched.io/explain``), whose filter verdicts give the failing
copy's reason per node.

``--exclude-nodes`` removes those nodes, and the pods bound to them, from the cluster
before it starts: a removed node can take no copy whatever the copy tolerates (an
``unschedulable`` node still takes pods tolerating its taint), and upstream's snapshot
does not count the pods of a node it does not know either.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from contracts import topology
from contracts.k8s import Pod
from services.cli.capacity_report import (
    FAILED_SCHEDULING,
    LIMIT_REACHED,
    CapacityReport,
    Termination,
    print_report,
)
from services.cli.commands import read_input
from services.cli.embedded import NOT_READY, DecisionRecord, EmbeddedCluster
from services.cli.errors import InputError
from services.cli.manifests import Document, check, read_documents
from services.cli.simulate import load_cluster
from services.common.clock import FakeClock
from services.common.decisions import EXPLAIN_ANNOTATION
from services.framework.config import Profile, default_profile

_DECIDED = ("Binding", FAILED_SCHEDULING)


def load_pod(text: str, source: str) -> Document:
    """The one Pod of the file at ``source`` (validated as the informer would), or
    InputError naming what the file holds instead."""
    documents = read_documents(text, source=source)
    pods = [d for d in documents if d.kind == "pod"]
    if len(documents) != 1 or len(pods) != 1:
        found = ", ".join(f"{d.kind} {_name(d.raw)}" for d in documents) or "nothing"
        raise InputError(f"{source}: expected one Pod, found {len(documents)} objects: {found}")
    check(pods[0], source=source)
    return pods[0]


def exclude_nodes(documents: Sequence[Document], names: Sequence[str]) -> list[Document]:
    """``documents`` without the Nodes ``names`` and the pods bound to them; InputError
    for a name no Node of ``documents`` has."""
    known = {str(_meta(d.raw).get("name")) for d in documents if d.kind == "node"}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InputError(f"--exclude-nodes: no node named {', '.join(unknown)} in the cluster")
    gone = set(names)
    return [
        d
        for d in documents
        if not (d.kind == "node" and _meta(d.raw).get("name") in gone)
        and not (d.kind == "pod" and _spec(d.raw).get("nodeName") in gone)
    ]


def copy_of(template: Mapping[str, Any], index: int) -> Document:
    """Copy ``index`` of the pod ``template`` (its object as written), as a watch event."""
    obj = copy.deepcopy(dict(template))
    meta = obj["metadata"] = dict(_meta(obj))
    meta["name"] = f"{meta.get('name')}-{index}"
    for field in ("uid", "resourceVersion"):
        meta.pop(field, None)
    meta["annotations"] = {**(meta.get("annotations") or {}), EXPLAIN_ANNOTATION: "true"}
    obj["spec"] = {k: v for k, v in _spec(obj).items() if k != "nodeName"}
    obj.pop("status", None)
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Document(index, "pod", body, topology.event_key("pod", "ADDED"), obj)


async def capacity(
    documents: Sequence[Document],
    pod: Document,
    *,
    seed: int | None = 0,
    profiles: Sequence[Profile] | None = None,
    max_limit: int = 0,
    now: datetime | None = None,
) -> CapacityReport:
    """Schedule copies of ``pod`` on the cluster ``documents`` until one is not bound
    or ``max_limit`` (0: no limit) are; the report says how many went where and why
    the run ended."""
    template = check(pod).object
    assert isinstance(template, Pod)
    names = [p.scheduler_name for p in profiles or (default_profile(),)]
    if template.spec.scheduler_name not in names:
        raise InputError(
            f"the pod's schedulerName {template.spec.scheduler_name!r} is no profile's "
            f"(the configuration's: {', '.join(names)})"
        )
    cluster = EmbeddedCluster(clock=FakeClock(), seed=seed, profiles=profiles)
    await cluster.start()
    try:
        await cluster.publish_and_schedule(documents)
        placed, termination = await _fill(cluster, pod.raw, max_limit)
    finally:
        await cluster.stop()
    return CapacityReport(
        timestamp=now or datetime.now(UTC),
        pod=template,
        instances_per_node=dict(sorted(placed.items())),
        termination=termination,
        max_limit=max_limit,
    )


async def _fill(
    cluster: EmbeddedCluster, template: Mapping[str, Any], max_limit: int
) -> tuple[dict[str, int], Termination]:
    placed: dict[str, int] = {}
    index = 0
    while True:
        document = copy_of(template, index)
        key = f"{_meta(document.raw).get('namespace') or 'default'}/{_name(document.raw)}"
        seen = len(cluster.decisions)
        await cluster.publish([document])
        await cluster.settle()
        record = _decision(cluster, seen, key)
        if record.kind != "Binding" or record.node is None:
            return placed, _termination(record)
        placed[record.node] = placed.get(record.node, 0) + 1
        index += 1
        if max_limit and index >= max_limit:
            message = f"Maximum number of pods simulated: {max_limit}"
            return placed, Termination(LIMIT_REACHED, message)


def _decision(cluster: EmbeddedCluster, seen: int, key: str) -> DecisionRecord:
    """The copy ``key``'s first decision since ``seen``; a copy PreEnqueue holds back
    has none but its NotReadyForScheduling."""
    for record in cluster.decisions[seen:]:
        if record.pod == key and record.kind in _DECIDED:
            return record
    for record in cluster.report_held_back():
        if record.pod == key:
            return record
    raise InputError(f"{key}: the run ended with no decision for this copy of the pod")


def _termination(record: DecisionRecord) -> Termination:
    if record.kind == NOT_READY:
        return Termination(NOT_READY, f"{record.message} ({record.plugin})")
    verdicts = (record.explain or {}).get("filter", {})
    failures = {node: v for node, v in sorted(verdicts.items()) if isinstance(v, Mapping)}
    return Termination(FAILED_SCHEDULING, record.message or "", failures)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def capacity_command(args: argparse.Namespace) -> int:
    from services.cli.runtime import load_profiles

    text, source = read_input(args.cluster)
    documents = load_cluster(text, source)
    pod = load_pod(*read_input(args.pod))
    excluded = [name for name in (args.exclude_nodes or "").split(",") if name]
    documents = exclude_nodes(documents, excluded)
    report = asyncio.run(
        capacity(
            documents,
            pod,
            seed=args.seed,
            profiles=load_profiles(args.config),
            max_limit=args.max_limit,
        )
    )
    print_report(report, args.output, sys.stdout)
    return 0


__all__ = ["capacity", "capacity_command", "copy_of", "exclude_nodes", "load_pod"]
