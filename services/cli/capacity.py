"""``ksched capacity CLUSTER --pod POD.yaml``: how many more copies of one pod (or,
with ``--ratio``, whole units of a mix of pods) the cluster can schedule, as
kubernetes-sigs/cluster-capacity answers it, on the embedded pipeline (the scheduler's
own decisions, not an estimate).

The cluster file is loaded as ``simulate`` loads it, and its pending pods are scheduled
first (they are ahead of the copies in any real queue). Then copies of the pod are
published one at a time, each after the previous one's decision: a bound copy stays,
so it counts against the cluster for the next. The run ends at the first copy that is
not bound (its FailedScheduling, or its NotReadyForScheduling when PreEnqueue holds it
back), or once ``--max-limit`` copies are bound (``LimitReached``, cluster-capacity's
words). Without ``--allow-preemption`` a copy that could only be placed by preempting
has failed, and nothing already in the cluster is evicted; with it, a copy bound once
its preemption's victims are deleted (as the API server would delete them) counts, and
the report lists what each such placement evicted.

Copy ``i`` (from 0) is named ``<name>-<i>`` in the pod's namespace, as cluster-capacity
names them; it loses the template's ``uid`` and ``nodeName`` and asks for the
scheduler's explanation (``ksched.io/explain``), whose filter verdicts give the failing
copy's reason per node.

With a PodGroup in the pod file (scheduler-plugins' ``scheduling.x-k8s.io``, the one
the pod's label names), each unit is a copy of the group, ``<group>-<i>``, and
``minMember`` copies of the pod in it, published together; the run ends at the first
unit not bound whole (Coscheduling binds all of a gang or none).

With ``--ratio N:M:…`` (one count per ``--pod``, in their order; required with several)
the question is how many whole units of a workload mix fit: a unit is N copies of the
first pod, then M of the second, …, each published after the previous one's decision as
above (a pod with a PodGroup contributes N whole gangs). Copies are numbered per pod
across units. The run ends at the first pod not bound, or once ``--max-limit`` pods of
all kinds together are bound, checked after each whole unit. Only whole units are
counted: the report leaves the pods of the unit that did not fit out of every count
and says how many of each were bound before it failed (``partialUnit``). Two ``--pod``
files may not name the same pod or PodGroup (their copies would share names).

``--exclude-nodes`` removes those nodes, and the pods bound to them, from the cluster
before it starts: a removed node can take no copy whatever the copy tolerates (an
``unschedulable`` node still takes pods tolerating its taint), and upstream's snapshot
does not count the pods of a node it does not know either.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec

from contracts import topology
from contracts.k8s import POD_GROUP_LABEL, Pod, PodGroup
from services.cli.capacity_report import (
    FAILED_SCHEDULING,
    LIMIT_REACHED,
    CapacityReport,
    MixPart,
    MixReport,
    Preempted,
    Termination,
    print_report,
)
from services.cli.commands import read_input
from services.cli.embedded import NOT_READY, PREEMPTION, DecisionRecord, EmbeddedCluster
from services.cli.errors import InputError
from services.cli.manifests import Document, check, read_documents
from services.cli.simulate import load_cluster
from services.common.clock import FakeClock
from services.common.decisions import EXPLAIN_ANNOTATION
from services.framework.config import Profile, default_profile

_DECIDED = ("Binding", FAILED_SCHEDULING)


@dataclass(frozen=True, slots=True)
class Template:
    """What is copied: one pod, or with a PodGroup, whole gangs of it."""

    pod: Document
    group: Document | None = None
    """A scheduler-plugins PodGroup the pod's ``scheduling.x-k8s.io/pod-group`` names:
    each unit is then a copy of the group and ``minMember`` copies of the pod in it."""

    def unit(self, number: int, first: int) -> list[Document]:
        """Unit ``number`` of copies, its pods numbered from ``first``."""
        if self.group is None:
            return [copy_of(self.pod.raw, first)]
        group = copy_of(self.group.raw, number, kind="podgroup")
        name = _name(group.raw)
        size = int(_spec(self.group.raw).get("minMember") or 1)
        return [group] + [copy_of(self.pod.raw, first + i, group=name) for i in range(size)]


def load_template(text: str, source: str) -> Template:
    """The one Pod of the file at ``source``, and the PodGroup it names if the file
    has one (each validated as the informer would); InputError naming what the file
    holds instead."""
    documents = read_documents(text, source=source)
    pods = [d for d in documents if d.kind == "pod"]
    groups = [d for d in documents if d.kind == "podgroup"]
    if len(pods) != 1 or len(documents) != 1 + len(groups) or len(groups) > 1:
        found = ", ".join(f"{d.kind} {_name(d.raw)}" for d in documents) or "nothing"
        raise InputError(
            f"{source}: expected one Pod (and the PodGroup it names), found "
            f"{len(documents)} objects: {found}"
        )
    pod = check(pods[0], source=source).object
    for group in groups:
        check(group, source=source)
        named = pod.metadata.labels.get(POD_GROUP_LABEL, "")
        if _name(group.raw) != named:
            raise InputError(
                f"{source}: the pod's label {POD_GROUP_LABEL} names {named!r}, not the "
                f"file's PodGroup {_name(group.raw)!r}"
            )
    return Template(pods[0], groups[0] if groups else None)


@dataclass(frozen=True, slots=True)
class Part:
    """One ``--pod`` of a unit: ``count`` copies of ``template`` (whole gangs of it,
    with a PodGroup), published one after another."""

    template: Template
    count: int = 1


def parse_ratio(value: str | None, pods: int) -> tuple[int, ...] | None:
    """``--ratio``'s counts, one per ``--pod`` in their order; None when it is not given
    for one ``--pod`` (copies one by one, cluster-capacity's question). InputError
    naming ``--ratio`` and its value for anything else."""
    if value is None:
        if pods > 1:
            raise InputError(
                "--ratio: required with several --pod files, one count per --pod (e.g. 3:1)"
            )
        return None
    counts = value.split(":")
    for count in counts:
        if not re.fullmatch(r"[0-9]+", count) or int(count) == 0:
            raise InputError(f"--ratio {value}: {count!r} is not a positive whole number")
    if len(counts) != pods:
        raise InputError(
            f"--ratio {value}: {len(counts)} count(s) for {pods} --pod file(s); "
            "give one per --pod, in their order"
        )
    return tuple(int(count) for count in counts)


def load_parts(files: Sequence[tuple[str, str]], ratio: Sequence[int]) -> list[Part]:
    """The mix of the pod files ``files`` (text, source), ``ratio[i]`` copies of the
    ``i``-th per unit; InputError when two of them name the same pod or PodGroup, whose
    copies would take the same names."""
    parts: list[Part] = []
    seen: dict[tuple[str, str], str] = {}
    for (text, source), count in zip(files, ratio, strict=True):
        template = load_template(text, source)
        for document in filter(None, (template.pod, template.group)):
            named = (document.kind, _name(document.raw))
            if named in seen:
                raise InputError(
                    f"{source}: the {document.kind} {named[1]} is in {seen[named]} too; "
                    "each --pod needs its own name"
                )
            seen[named] = source
        parts.append(Part(template, count))
    return parts


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


def copy_of(
    template: Mapping[str, Any], index: int, *, kind: str = "pod", group: str | None = None
) -> Document:
    """Copy ``index`` of the object ``template`` (as written) as a watch event: named
    ``<name>-<index>``, without uid and status; a pod copy also without ``nodeName``,
    asking for the scheduler's explanation, in the PodGroup ``group`` if given."""
    obj = copy.deepcopy(dict(template))
    meta = obj["metadata"] = dict(_meta(obj))
    meta["name"] = f"{meta.get('name')}-{index}"
    for server_set in ("uid", "resourceVersion"):
        meta.pop(server_set, None)
    obj.pop("status", None)
    if kind == "pod":
        meta["annotations"] = {**(meta.get("annotations") or {}), EXPLAIN_ANNOTATION: "true"}
        obj["spec"] = {k: v for k, v in _spec(obj).items() if k != "nodeName"}
    if group is not None:
        meta["labels"] = {**(meta.get("labels") or {}), POD_GROUP_LABEL: group}
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Document(index, kind, body, topology.event_key(kind, "ADDED"), obj)


async def capacity(
    documents: Sequence[Document],
    template: Template,
    *,
    seed: int | None = 0,
    profiles: Sequence[Profile] | None = None,
    max_limit: int = 0,
    allow_preemption: bool = False,
    now: datetime | None = None,
) -> CapacityReport:
    """Schedule copies of ``template`` on the cluster ``documents`` until one is not
    bound or ``max_limit`` (0: no limit) pods are (checked after each whole gang); the
    report says how many went where and why the run ended. ``allow_preemption``: a
    copy bound once its preemption's victims are gone counts, and the report lists
    what each such placement evicted."""
    run, termination = await _fill(
        documents, [Part(template)], seed, profiles, max_limit, allow_preemption
    )
    return CapacityReport(
        timestamp=now or datetime.now(UTC),
        pod=_pod(template),
        group=_group(template),
        instances_per_node=dict(sorted(run.placed[0].items())),
        termination=termination,
        max_limit=max_limit,
        preemptions=tuple(run.preemptions) if allow_preemption else None,
    )


async def capacity_mix(
    documents: Sequence[Document],
    parts: Sequence[Part],
    *,
    seed: int | None = 0,
    profiles: Sequence[Profile] | None = None,
    max_limit: int = 0,
    allow_preemption: bool = False,
    now: datetime | None = None,
) -> MixReport:
    """Schedule whole units of the mix ``parts`` on the cluster ``documents`` (each
    unit: every copy of the first part, then of the second, …, one after another)
    until a pod is not bound or ``max_limit`` (0: no limit) pods of all parts are
    (checked after each whole unit). Only whole units are counted; the report says
    how many pods of the unit that did not fit were bound before it failed."""
    run, termination = await _fill(documents, parts, seed, profiles, max_limit, allow_preemption)
    partial = {
        _pod(part.template).metadata.name: bound
        for part, bound in zip(parts, run.partial, strict=True)
        if bound
    }
    return MixReport(
        parts=tuple(
            MixPart(
                pod=_pod(part.template),
                count=part.count,
                instances_per_node=dict(sorted(placed.items())),
                group=_group(part.template),
            )
            for part, placed in zip(parts, run.placed, strict=True)
        ),
        units=run.units,
        termination=termination,
        timestamp=now or datetime.now(UTC),
        partial_unit=partial,
        max_limit=max_limit,
        preemptions=tuple(run.preemptions) if allow_preemption else None,
    )


async def _fill(
    documents: Sequence[Document],
    parts: Sequence[Part],
    seed: int | None,
    profiles: Sequence[Profile] | None,
    max_limit: int,
    allow_preemption: bool,
) -> tuple[_Run, Termination]:
    """The cluster ``documents`` with its pending pods scheduled, then filled with
    units of ``parts``: the run's placements and why it ended."""
    names = [p.scheduler_name for p in profiles or (default_profile(),)]
    for part in parts:
        pod = _pod(part.template)
        if pod.spec.scheduler_name not in names:
            whose = "the pod's" if len(parts) == 1 else f"the pod {pod.metadata.name}'s"
            raise InputError(
                f"{whose} schedulerName {pod.spec.scheduler_name!r} is no profile's "
                f"(the configuration's: {', '.join(names)})"
            )
    cluster = EmbeddedCluster(clock=FakeClock(), seed=seed, profiles=profiles)
    await cluster.start()
    try:
        await cluster.publish_and_schedule(documents)
        taken = frozenset(_key(d.raw) for d in documents if d.kind in ("pod", "podgroup"))
        run = _Run(cluster, allow_preemption, taken, parts)
        termination = await run.fill(max_limit)
    finally:
        await cluster.stop()
    return run, termination


@dataclass
class _Run:
    """The placements of whole units of ``parts`` so far on ``cluster``."""

    cluster: EmbeddedCluster
    allow_preemption: bool
    taken: frozenset[str]
    """The cluster's pods and PodGroups (``namespace/name``): a copy must not be one."""
    parts: Sequence[Part]
    placed: list[dict[str, int]] = field(init=False)
    """Per part, node → its copies bound there in whole units."""
    partial: list[int] = field(init=False)
    """Per part, its copies bound in the unit that did not fit."""
    units: int = 0
    """Whole units bound."""
    preemptions: list[Preempted] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.placed = [{} for _ in self.parts]
        self.partial = [0 for _ in self.parts]

    async def fill(self, max_limit: int) -> Termination:
        """Publish unit after unit, each copy (or gang) of it after the previous one's
        decision, until a pod is not bound, or ``max_limit`` pods are."""
        numbers = [0] * len(self.parts)  # per part, the next gang's number
        indexes = [0] * len(self.parts)  # per part, the next pod copy's number
        bound = 0
        while True:
            nodes: list[list[str]] = [[] for _ in self.parts]
            preempted: list[Preempted] = []
            for k, part in enumerate(self.parts):
                for _ in range(part.count):
                    unit = part.template.unit(numbers[k], indexes[k])
                    numbers[k] += 1
                    indexes[k] += sum(d.kind == "pod" for d in unit)
                    records, evicting = await self._publish(unit)
                    nodes[k] += [str(r.node) for r in records if _bound(r)]
                    failed = [r for r in records if not _bound(r)]
                    if failed:
                        self.partial = [len(n) for n in nodes]
                        return _termination(min(failed, key=self.cluster.decisions.index))
                    preempted += evicting
            for placed, bound_nodes in zip(self.placed, nodes, strict=True):
                for node in bound_nodes:
                    placed[node] = placed.get(node, 0) + 1
            self.preemptions += preempted
            self.units += 1
            bound += sum(len(n) for n in nodes)
            if max_limit and bound >= max_limit:
                message = f"Maximum number of pods simulated: {max_limit}"
                return Termination(LIMIT_REACHED, message)

    async def _publish(
        self, unit: Sequence[Document]
    ) -> tuple[list[DecisionRecord], list[Preempted]]:
        """Publish ``unit`` (a copy, or a gang and its PodGroup) and wait for its pods'
        decisions: those, and the placements among them that evicted pods."""
        for document in unit:
            if _key(document.raw) in self.taken:
                raise InputError(
                    f"the cluster has a {document.kind} {_key(document.raw)} already, "
                    "the name of a copy (<name>-<i>): rename the one in --pod"
                )
        seen = len(self.cluster.decisions)
        await self.cluster.publish(unit)
        await self.cluster.settle()
        pods = [_key(d.raw) for d in unit if d.kind == "pod"]
        evicting = [
            Preempted(r.pod, str(r.node), r.victims)
            for r in self.cluster.decisions[seen:]
            if r.kind == PREEMPTION and r.pod in pods
        ]
        return [self._decision(seen, key) for key in pods], evicting

    def _decision(self, seen: int, key: str) -> DecisionRecord:
        """The copy ``key``'s first decision since ``seen``; with preemption allowed,
        its Binding if it came to one, else its last attempt's FailedScheduling (the
        one whose preemption found nothing). A copy PreEnqueue holds back has none but
        its NotReadyForScheduling."""
        mine = [r for r in self.cluster.decisions[seen:] if r.pod == key and r.kind in _DECIDED]
        if mine and self.allow_preemption:
            bound = [r for r in mine if r.kind == "Binding"]
            return bound[0] if bound else mine[-1]
        if mine:
            return mine[0]
        for record in self.cluster.report_held_back():
            if record.pod == key:
                return record
        raise InputError(f"{key}: the run ended with no decision for this copy of the pod")


def _bound(record: DecisionRecord) -> bool:
    return record.kind == "Binding" and record.node is not None


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


def _key(obj: Mapping[str, Any]) -> str:
    return f"{_meta(obj).get('namespace') or 'default'}/{_name(obj)}"


def _pod(template: Template) -> Pod:
    pod = check(template.pod).object
    assert isinstance(pod, Pod)
    return pod


def _group(template: Template) -> PodGroup | None:
    if template.group is None:
        return None
    group = check(template.group).object
    assert isinstance(group, PodGroup)
    return group


def capacity_command(args: argparse.Namespace) -> int:
    from services.cli.runtime import load_profiles

    text, source = read_input(args.cluster)
    documents = load_cluster(text, source)
    ratio = parse_ratio(args.ratio, len(args.pod))
    parts = load_parts([read_input(pod) for pod in args.pod], ratio or (1,))
    excluded = [name for name in (args.exclude_nodes or "").split(",") if name]
    documents = exclude_nodes(documents, excluded)
    flags = {
        "seed": args.seed,
        "profiles": load_profiles(args.config),
        "max_limit": args.max_limit,
        "allow_preemption": args.allow_preemption,
    }
    report: CapacityReport | MixReport
    if ratio is None:
        report = asyncio.run(capacity(documents, parts[0].template, **flags))
    else:
        report = asyncio.run(capacity_mix(documents, parts, **flags))
    print_report(report, args.output, sys.stdout)
    return 0


__all__ = [
    "Part",
    "Template",
    "capacity",
    "capacity_command",
    "capacity_mix",
    "copy_of",
    "exclude_nodes",
    "load_parts",
    "load_template",
    "parse_ratio",
]
