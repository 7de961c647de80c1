"""Builders for PodTopologySpread's tests, in the shape of upstream's ``st.MakePod()``
calls: ``spread(pod, 1, "zone", DO_NOT_SCHEDULE, FOO)``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from contracts.k8s import (
    Affinity,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerReference,
    Pod,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)
from services.framework.api.interface import CycleState
from services.framework.api.listers import Listers
from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.podtopologyspread import PodTopologySpread, PodTopologySpreadArgs
from services.framework.plugins.podtopologyspread.args import DefaultConstraint
from services.framework.plugins.podtopologyspread.filtering import read_state
from tests.builders import make_node
from tests.unit.framework.helpers import snapshot_of

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", value="", effect="NoSchedule")


def exists(*keys: str) -> LabelSelector:
    return LabelSelector(
        match_expressions=[LabelSelectorRequirement(key=k, operator="Exists") for k in keys]
    )


def labels(**pairs: str) -> LabelSelector:
    return LabelSelector(match_labels=dict(pairs))


FOO = exists("foo")
BAR = exists("bar")


def zoned(name: str, zone: str, **extra: str) -> Node:
    """A node labelled ``zone`` and ``node`` (upstream's test topology keys)."""
    return make_node(name, labels={"zone": zone, "node": name, **extra})


def _spec(target: Pod, **changes: object) -> Pod:
    return msgspec.structs.replace(target, spec=msgspec.structs.replace(target.spec, **changes))


def spread(
    target: Pod,
    max_skew: int,
    key: str,
    action: str,
    selector: LabelSelector | None,
    *,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: Sequence[str] = (),
) -> Pod:
    """``SpreadConstraint(maxSkew, key, action, selector, minDomains, affinityPolicy,
    taintsPolicy, matchLabelKeys)``."""
    constraint = TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=action,
        label_selector=selector,
        min_domains=min_domains,
        node_affinity_policy=affinity_policy,
        node_taints_policy=taints_policy,
        match_label_keys=list(match_label_keys),
    )
    return _spec(
        target, topology_spread_constraints=[*target.spec.topology_spread_constraints, constraint]
    )


def node_selector(target: Pod, **pairs: str) -> Pod:
    return _spec(target, node_selector=dict(pairs))


def node_affinity(target: Pod, key: str, operator: str, values: Iterable[str]) -> Pod:
    """``NodeAffinityIn`` / ``NodeAffinityNotIn``: one required term, one expression."""
    requirement = NodeSelectorRequirement(key=key, operator=operator, values=list(values))
    term = NodeSelectorTerm(match_expressions=[requirement])
    required = NodeSelector(node_selector_terms=[term])
    affinity = Affinity(
        node_affinity=NodeAffinity(required_during_scheduling_ignored_during_execution=required)
    )
    return _spec(target, affinity=affinity)


def toleration(target: Pod, key: str) -> Pod:
    """``Toleration(key)``: Exists, NoSchedule."""
    added = Toleration(key=key, operator="Exists", effect="NoSchedule")
    return _spec(target, tolerations=[*target.spec.tolerations, added])


def owned_by(target: Pod, kind: str, name: str, api_version: str = "apps/v1") -> Pod:
    """``OwnerReference(name, gvk)``: a controller owner reference."""
    ref = OwnerReference(
        api_version=api_version, kind=kind, name=name, uid=f"{name}-uid", controller=True
    )
    meta = msgspec.structs.replace(target.metadata, owner_references=[ref])
    return msgspec.structs.replace(target, metadata=meta)


def listers_of(objects: Iterable[object]) -> Listers:
    """Listers holding ``objects`` (Services, ReplicaSets, …), as upstream's informers."""
    listers = Listers()
    for obj in objects:
        listers.put(obj)
    return listers


def plugin(
    defaulting: str = "List",
    defaults: Sequence[Mapping[str, object]] = (),
    objects: Iterable[object] = (),
) -> PodTopologySpread:
    """The plugin with these args; ``objects`` are the Services and controllers its
    listers hold (upstream's ``objs``)."""
    args = PodTopologySpreadArgs(
        defaulting_type=defaulting,
        default_constraints=tuple(msgspec.convert(d, DefaultConstraint) for d in defaults),
    )
    args.validate("")
    return PodTopologySpread(args, listers_of(objects))


def table(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> Snapshot:
    return snapshot_of(nodes, pods).snapshot()


def domain_counts(state: CycleState) -> list[dict[str, int]]:
    """Per constraint, upstream's ``TpValueToMatchNum``: present domain → count."""
    built = read_state(state)
    return [
        {
            s.column.values[code]: int(s.counts[code])
            for code in range(len(s.column.values))
            if s.present[code]
        }
        for s in built.spreads
    ]


def min_matches(state: CycleState) -> list[int]:
    """Per constraint, the global minimum Filter uses."""
    built = read_state(state)
    return [
        s.min_match(c.min_domains) for c, s in zip(built.constraints, built.spreads, strict=True)
    ]


def pre_filtered(
    pl: PodTopologySpread, incoming: Pod, nodes: Snapshot
) -> tuple[CycleState, PodInfo]:
    state, info = CycleState(), PodInfo.of(incoming)
    _, status = pl.pre_filter(state, info, nodes)
    assert status.is_success(), status
    return state, info
