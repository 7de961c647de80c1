"""PodTopologySpread in a Framework: placements, FitError messages, nominated pods."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from services.framework.api.status import Code
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.config import DEFAULT_PLUGINS, PluginRef, Plugins, PluginSet, Profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.podtopologyspread import ENTRY
from services.framework.runtime.filtering import NominatedPods
from services.framework.runtime.framework import Framework
from services.framework.runtime.profile import merge_plugins
from tests.builders import make_node, make_pod
from tests.builders.workloads import make_replica_set
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.podtopologyspread.helpers import (
    FOO,
    HOSTNAME,
    ZONE,
    labels,
    listers_of,
    owned_by,
    spread,
)

DNS, SA = "DoNotSchedule", "ScheduleAnyway"


WEB_RS = [make_replica_set("rs1", labels(app="web"))]


def framework(
    seed: int = 0, args: dict[str, object] | None = None, objects: Sequence[object] = ()
) -> Framework:
    registry = {**in_tree_registry(), ENTRY.name: ENTRY}
    plugins = merge_plugins(
        DEFAULT_PLUGINS, Plugins(multi_point=PluginSet((PluginRef(ENTRY.name, 2),)))
    )
    plugin_args = {} if args is None else {ENTRY.name: ENTRY.decode_args(args, "args")}
    profile = Profile(plugins=plugins, plugin_args=plugin_args)
    return Framework(profile, registry, rng=random.Random(seed), listers=listers_of(objects))


def zone_node(name: str, zone: str):
    return make_node(name, labels={ZONE: zone, HOSTNAME: name})


NODES = [
    zone_node("a1", "zone-a"),
    zone_node("a2", "zone-a"),
    zone_node("b1", "zone-b"),
    zone_node("c1", "zone-c"),
]


def test_hard_zone_constraint_places_the_pod_in_the_emptiest_zone():
    existing = [
        make_pod("e1", node_name="a1", labels={"app": "web"}),
        make_pod("e2", node_name="b1", labels={"app": "web"}),
    ]
    incoming = spread(make_pod("p", labels={"app": "web"}), 1, ZONE, DNS, labels(app="web"))
    result = framework().schedule_pod(snapshot_of(NODES, existing), incoming)
    assert result.status.is_success()
    assert result.node == "c1"
    assert result.feasible_nodes == 1


def test_fit_error_message_counts_the_reasons():
    """Three zones with one matching pod each, but minDomains 4: the global minimum is
    0, so every zone is over maxSkew; the unlabelled node lacks the key."""
    nodes = [*NODES, make_node("bare", labels={})]
    existing = [
        make_pod("e1", node_name="a1", labels={"foo": ""}),
        make_pod("e2", node_name="b1", labels={"foo": ""}),
        make_pod("e3", node_name="c1", labels={"foo": ""}),
    ]
    incoming = spread(make_pod("p", labels={"foo": ""}), 1, ZONE, DNS, FOO, min_domains=4)
    result = framework().schedule_pod(snapshot_of(nodes, existing), incoming)
    assert result.status.code == Code.Unschedulable
    assert result.message == (
        "0/5 nodes are available: 1 node(s) didn't match pod topology spread constraints "
        "(missing required label), 4 node(s) didn't match pod topology spread constraints. "
        "no new claims to deallocate,"
        " preemption: 0/5 nodes are available: 1 Preemption is not helpful for scheduling, "
        "4 No preemption victims found for incoming pod."
    )
    assert result.unschedulable_plugins == {"PodTopologySpread"}
    assert result.fit_error is not None
    assert not result.fit_error.diagnosis.all_unresolvable


def test_repeated_scheduling_spreads_evenly():
    snapshot = snapshot_of(NODES)
    fw = framework()
    selector = labels(app="web")
    placed: Counter[str] = Counter()
    for i in range(9):
        incoming = PodInfo.of(
            spread(make_pod(f"p{i}", labels={"app": "web"}), 1, ZONE, DNS, selector)
        )
        result = fw.schedule_pod(snapshot, incoming)
        assert result.node is not None, result.message
        snapshot.assume(incoming, result.node)
        placed[result.node.rstrip("0123456789")[:1]] += 1
    assert placed == {"a": 3, "b": 3, "c": 3}


def test_soft_hostname_constraint_prefers_the_node_with_fewest_matching_pods():
    existing = [
        make_pod("e1", node_name="a1", labels={"foo": ""}),
        make_pod("e2", node_name="a2", labels={"foo": ""}),
        make_pod("e3", node_name="b1", labels={"foo": ""}),
    ]
    incoming = spread(make_pod("p", labels={"foo": ""}), 1, HOSTNAME, SA, FOO)
    result = framework().schedule_pod(snapshot_of(NODES, existing), incoming, explain=True)
    assert result.node == "c1"
    assert result.scores["PodTopologySpread"].tolist() == [0, 0, 0, 100]


def test_system_defaults_spread_the_pods_of_one_replica_set():
    snapshot = snapshot_of(NODES)
    fw = framework(objects=WEB_RS)
    placed: Counter[str] = Counter()
    for i in range(8):
        incoming = PodInfo.of(
            owned_by(make_pod(f"p{i}", labels={"app": "web"}), "ReplicaSet", "rs1")
        )
        result = fw.schedule_pod(snapshot, incoming)
        assert result.node is not None
        snapshot.assume(incoming, result.node)
        placed[result.node] += 1
    assert set(placed) == {"a1", "a2", "b1", "c1"}
    assert max(placed.values()) - min(placed.values()) <= 2


def test_list_defaults_apply_hard_constraints_to_pods_without_their_own():
    args = {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS}],
    }
    existing = [
        owned_by(make_pod(f"e{i}", node_name=n, labels={"app": "web"}), "ReplicaSet", "rs1")
        for i, n in enumerate(("a1", "b1"))
    ]
    incoming = owned_by(make_pod("p", labels={"app": "web"}), "ReplicaSet", "rs1")
    result = framework(args=args, objects=WEB_RS).schedule_pod(
        snapshot_of(NODES, existing), incoming
    )
    assert result.node == "c1"


def test_nominated_pods_count_on_their_node():
    """zone-a holds one matching pod, b and c none: b1 and c1 fit, unless a nominated
    pod (the two-pass filter adds it through AddPod) already fills c."""
    snapshot: Cache = snapshot_of(NODES, [make_pod("e1", node_name="a1", labels={"foo": ""})])
    nominee = PodInfo.of(spread(make_pod("nominee", labels={"foo": ""}), 1, ZONE, DNS, FOO))
    incoming = spread(make_pod("late", labels={"foo": ""}), 1, ZONE, DNS, FOO)
    for seed in range(5):
        fw = framework(seed)
        result = fw.schedule_pod(snapshot, incoming, nominated=NominatedPods.of({"c1": [nominee]}))
        assert result.node == "b1"
        result = fw.schedule_pod(snapshot, incoming, nominated=NominatedPods.of({"b1": [nominee]}))
        assert result.node == "c1"
