"""Builders for the ports of upstream's DefaultPreemption tables: ``P`` for
``st.MakePod()``, nodes named as upstream's TestDryRunPreemption names them, PDBs, and
the dry run over every node."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec

from contracts.k8s import (
    LabelSelector,
    Node,
    ObjectMeta,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from services.framework.api.diagnosis import Diagnosis
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.defaultpreemption.args import DefaultPreemptionArgs
from services.framework.plugins.defaultpreemption.plugin import (
    Candidate,
    DefaultPreemption,
)
from services.framework.runtime.framework import Framework
from tests.builders import make_node, make_pod
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.podtopologyspread.helpers import FOO, spread

NOW = 1_700_000_000.0
NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": 1}
NODE_RES = {"cpu": "200m", "memory": "400"}


@dataclass(frozen=True)
class P:
    """``st.MakePod()``: ``P("p1").on("node1").prio(MID).req(LARGE).obj()``."""

    name: str
    node: str | None = None
    priority: int | None = None
    requests: dict[str, str] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    start: int | None = None
    nominated: str | None = None
    never: bool = False
    terminating: bool = False
    preempted: bool = False

    def on(self, node: str) -> P:
        return replace(self, node=node)

    def prio(self, priority: int) -> P:
        return replace(self, priority=priority)

    def req(self, requests: dict[str, str]) -> P:
        return replace(self, requests=requests)

    def label(self, key: str, value: str) -> P:
        return replace(self, labels={**self.labels, key: value})

    def nominate(self, node: str) -> P:
        return replace(self, nominated=node)

    def going(self, *, by_preemption: bool = False) -> P:
        """Terminating; ``by_preemption``: with the scheduler's DisruptionTarget."""
        return replace(self, terminating=True, preempted=by_preemption)

    def started(self, second: int) -> P:
        """``StartTime(epochTimeN)``: N seconds after the epoch (upstream's are
        nanoseconds; only their order matters)."""
        return replace(self, start=second)

    def obj(self) -> Pod:
        pod = make_pod(
            self.name,
            uid=self.name,
            node_name=self.node,
            priority=self.priority,
            requests=self.requests,
            labels=self.labels,
            nominated_node_name=self.nominated,
            deletion_timestamp="2023-11-14T22:00:00Z" if self.terminating else None,
        )
        status = pod.status
        if self.start is not None:
            status = msgspec.structs.replace(
                status, start_time=f"1970-01-01T00:00:{self.start:02d}Z"
            )
        if self.preempted:
            condition = PodCondition(
                type="DisruptionTarget", status="True", reason="PreemptionByScheduler"
            )
            status = msgspec.structs.replace(status, conditions=[condition])
        spec = pod.spec
        if self.never:
            spec = msgspec.structs.replace(spec, preemption_policy="Never")
        return msgspec.structs.replace(pod, spec=spec, status=status)


def node(spec: str, capacity: dict[str, Any] | None = None, **labels: str) -> Node:
    """``node-a/zone1``: node ``node-a`` labelled hostname=node-a, zone=zone1 (upstream's
    TestDryRunPreemption naming); capacity VERY_LARGE and 32 pods unless given."""
    parts = spec.split("/")
    keyed = dict(zip(("hostname", "zone", "region"), parts, strict=False))
    resources = {"pods": 32, **(capacity if capacity is not None else VERY_LARGE)}
    return make_node(parts[0], allocatable=resources, labels={**keyed, **labels})


def pdb(
    allowed: int, disrupted: Sequence[str] = (), name: str = "pdb", **match: str
) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodDisruptionBudgetSpec(selector=LabelSelector(match_labels=dict(match))),
        status=PodDisruptionBudgetStatus(
            disruptions_allowed=allowed,
            disrupted_pods=dict.fromkeys(disrupted, "2023-01-01T00:00:00Z"),
        ),
    )


def framework_for(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    pdbs: Sequence[PodDisruptionBudget] = (),
    args: DefaultPreemptionArgs | None = None,
) -> tuple[Framework, DefaultPreemption, Any]:
    cache = snapshot_of(nodes, pods)
    for budget in pdbs:
        cache.listers.put(budget)
    framework = Framework(
        default_profile(),
        in_tree_registry(),
        rng=random.Random(0),
        listers=cache.listers,
        now=lambda: NOW,
    )
    plugin = framework.plugins["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    if args is not None:
        defaulted = args.defaulted()
        plugin.percentage = defaulted.min_candidate_nodes_percentage or 0
        plugin.absolute = defaulted.min_candidate_nodes_absolute or 0
    return framework, plugin, cache


def both_dry_runs(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    incoming: Pod,
    *,
    pdbs: Sequence[PodDisruptionBudget] = (),
    offset: int,
    absolute: int,
) -> list[tuple[Any, ...]]:
    """One whole cycle of ``incoming`` with the columnar dry run, then with the node
    by node one (``SelectVictimsOnNode`` per node), both from ``offset`` and stopping
    at ``absolute`` candidates: what each chose (node, message, nominated node,
    victims, PDB violations). The two must be equal."""
    outcomes = []
    for node_by_node in (False, True):
        framework, plugin, cache = framework_for(nodes, pods, pdbs)
        plugin.offset = lambda n: offset % n
        plugin.absolute = absolute
        if node_by_node:
            framework.extensions_active = lambda state: True  # type: ignore[method-assign]
        result = framework.schedule_pod(cache, PodInfo.of(incoming))
        chosen = result.post_filter
        picked = (
            (chosen.nominated_node_name, [v.uid for v in chosen.victims], chosen.num_pdb_violations)
            if chosen is not None
            else None
        )
        outcomes.append((result.node, result.message, picked))
    return outcomes


def dry_run(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    preemptor: Pod,
    *,
    pdbs: Sequence[PodDisruptionBudget] = (),
    args: DefaultPreemptionArgs | None = None,
    offsets: Sequence[int] = (0,),
    node_by_node: bool = False,
    preemptors: Sequence[Pod] = (),
) -> list[list[Candidate]]:
    """``DryRunPreemption`` over every node (all Unschedulable), one cycle per
    preemptor, each from its offset: the candidates of each cycle."""
    framework, plugin, cache = framework_for(nodes, pods, pdbs, args)
    if node_by_node:
        framework.extensions_active = lambda state: True  # type: ignore[method-assign]
    view = cache.snapshot()
    cycles = []
    for incoming, offset in zip(preemptors or [preemptor], offsets, strict=True):
        info = PodInfo.of(incoming)
        state = CycleState()
        assert framework.run_pre_filter_plugins(state, info, view).is_success()
        plugin.offset = lambda n, offset=offset: offset % n  # type: ignore[misc]
        diagnosis = Diagnosis(
            num_nodes=view.num_nodes, node_status=lambda _row: Status(Code.Unschedulable)
        )
        candidates, _, errors = plugin.find_candidates(state, info, view, diagnosis)
        assert errors == []
        cycles.append(candidates)
    return cycles


def named(candidates: list[Candidate]) -> list[tuple[str, list[str], int]]:
    """Sorted by node, victims by name, as upstream compares them."""
    return sorted(
        (c.node, sorted(v.pod.metadata.name for v in c.victims), c.num_pdb_violations)
        for c in candidates
    )


def n(*names: str) -> list[Node]:
    return [node(name) for name in names]


def spread_preemptor() -> Pod:
    incoming = P("p").label("foo", "").prio(HIGH).obj()
    incoming = spread(incoming, 1, "zone", "DoNotSchedule", FOO)
    return spread(incoming, 1, "hostname", "DoNotSchedule", FOO)
