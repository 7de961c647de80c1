"""InterPodAffinity inside Framework.schedule_pod: placements, FitError messages, the
nominated-pods pass (AddPod) and the index following the snapshot between cycles."""

from __future__ import annotations

import random

import pytest

from services.framework.api.interface import CycleState
from services.framework.api.interface import ExtensionPoint as P
from services.framework.api.status import Code
from services.framework.api.types import PodInfo
from services.framework.config import DEFAULT_PLUGINS
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.interpodaffinity import ENTRY, NAME
from services.framework.runtime.filtering import NominatedPods
from services.framework.runtime.framework import Framework
from services.framework.runtime.profile import PluginRef, Plugins, PluginSet, Profile, merge_plugins
from tests.builders import make_node, make_pod
from tests.builders.selectors import pod_affinity
from tests.unit.framework.plugins.interpodaffinity.support import (
    exists,
    fresh,
    in_,
    snapshot,
    term,
)

ZONES = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}


def cluster():
    return [make_node(n, labels={"zone": z, "host": n}) for n, z in ZONES.items()]


def framework(snap, seed: int = 0) -> Framework:
    custom = Plugins(multi_point=PluginSet(enabled=(PluginRef(NAME, weight=2),)))
    profile = Profile(plugins=merge_plugins(DEFAULT_PLUGINS, custom))
    registry = {**in_tree_registry(), ENTRY.name: ENTRY}
    return Framework(profile, registry, rng=random.Random(seed), listers=snap.listers)


def test_plugin_runs_at_its_extension_points_with_weight_two():
    fw = framework(snapshot(cluster()))
    for point in (P.PreFilter, P.Filter, P.PreScore, P.Score):
        assert NAME in fw.plugin_names(point)
    assert fw.score_weights[NAME] == 2


def test_required_affinity_follows_the_group_into_its_zone():
    snap = snapshot(cluster(), [make_pod(fresh(), labels={"app": "db"}, node_name="b2")])
    fw = framework(snap)
    for _ in range(4):
        incoming = make_pod(
            fresh(), labels={"app": "web"}, affinity=pod_affinity([term("zone", in_("app", "db"))])
        )
        result = fw.schedule_pod(snap, incoming)
        assert result.node in {"b1", "b2"}
        snap.assume(PodInfo.of(incoming), result.node)


def test_first_pod_of_a_group_goes_anywhere_then_the_group_follows():
    snap = snapshot(cluster())
    fw = framework(snap, seed=3)
    placed = []
    for _ in range(5):
        incoming = make_pod(
            fresh(), labels={"app": "web"}, affinity=pod_affinity([term("zone", exists("app"))])
        )
        result = fw.schedule_pod(snap, incoming)
        assert result.node is not None
        placed.append(ZONES[result.node])
        snap.assume(PodInfo.of(incoming), result.node)
    assert len(set(placed)) == 1


def test_anti_affinity_spreads_one_per_host_then_fails_with_upstreams_message():
    snap = snapshot(cluster())
    fw = framework(snap)
    hosts = set()
    for _ in range(4):
        incoming = make_pod(
            fresh(),
            labels={"app": "web"},
            affinity=pod_affinity(anti=[term("host", exists("app"))]),
        )
        result = fw.schedule_pod(snap, incoming)
        assert result.node is not None and result.node not in hosts
        hosts.add(result.node)
        snap.assume(PodInfo.of(incoming), result.node)
    result = fw.schedule_pod(
        snap,
        make_pod(
            fresh(),
            labels={"app": "web"},
            affinity=pod_affinity(anti=[term("host", exists("app"))]),
        ),
    )
    assert result.status.code == Code.Unschedulable
    assert result.message == (
        "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules."
        " no new claims to deallocate,"
        " preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
    )
    assert result.unschedulable_plugins == {NAME}


def test_existing_pods_anti_affinity_keeps_the_pod_out_of_their_zone():
    snap = snapshot(
        cluster(),
        [
            make_pod(
                fresh(), node_name="a1", affinity=pod_affinity(anti=[term("zone", exists("app"))])
            )
        ],
    )
    result = framework(snap).schedule_pod(snap, make_pod(fresh(), labels={"app": "x"}))
    assert result.node in {"b1", "b2"}


def test_fit_error_counts_each_nodes_first_reason():
    pods = [
        make_pod(
            fresh(),
            labels={"app": "y"},
            node_name="a1",
            affinity=pod_affinity(anti=[term("zone", exists("app"))]),
        ),
        make_pod(fresh(), labels={"app": "z"}, node_name="b1"),
        make_pod(fresh(), labels={"app": "z"}, node_name="b2"),
    ]
    snap = snapshot(cluster(), pods)
    incoming = make_pod(
        fresh(), labels={"app": "x"}, affinity=pod_affinity(anti=[term("host", exists("app"))])
    )
    result = framework(snap).schedule_pod(snap, incoming)
    assert result.message == (
        "0/4 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, "
        "3 node(s) didn't match pod anti-affinity rules."
        " no new claims to deallocate,"
        " preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
    )
    assert result.fit_error is not None
    assert not result.fit_error.diagnosis.all_unresolvable


def test_unmatched_required_affinity_is_unresolvable():
    snap = snapshot(cluster(), [make_pod(fresh(), labels={"app": "web"}, node_name="a1")])
    incoming = make_pod(
        fresh(), labels={"app": "x"}, affinity=pod_affinity([term("zone", in_("app", "db"))])
    )
    result = framework(snap).schedule_pod(snap, incoming)
    assert result.message == (
        "0/4 nodes are available: 4 node(s) didn't match pod affinity rules."
        " no new claims to deallocate,"
        " preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )
    assert result.fit_error is not None
    assert result.fit_error.diagnosis.all_unresolvable


def test_preferred_anti_affinity_scores_away_from_matching_pods():
    snap = snapshot(
        cluster(),
        [make_pod(fresh(), labels={"app": "web"}, node_name=n) for n in ("a1", "a2", "b1")],
    )
    fw = framework(snap)
    incoming = make_pod(
        fresh(),
        labels={"app": "web"},
        affinity=pod_affinity(preferred_anti=[(100, term("host", exists("app")))]),
    )
    result = fw.schedule_pod(snap, incoming, explain=True)
    assert result.node == "b2"


@pytest.mark.parametrize("where", ["a1", "b2"])
def test_nominated_pod_matching_the_incoming_anti_affinity_blocks_its_node(where):
    snap = snapshot(cluster())
    fw = framework(snap)
    nominee = PodInfo.of(make_pod("nominee", labels={"app": "web"}))
    incoming = make_pod(
        fresh(), labels={"app": "web"}, affinity=pod_affinity(anti=[term("host", exists("app"))])
    )
    result = fw.schedule_pod(snap, incoming, nominated=NominatedPods.of({where: [nominee]}))
    assert result.node is not None and result.node != where


FIRST_OF_GROUP_CASES = {
    # (existing pods, the incoming pod's labels, its required affinity) -> waived
    "no pod of the group anywhere, the pod matches its terms": (
        [], {"app": "web"}, [term("zone", in_("app", "web"))], True
    ),
    "a pod of the group exists": (
        [make_pod(fresh(), labels={"app": "web"}, node_name="a1")], {"app": "web"},
        [term("zone", in_("app", "web"))], False,
    ),
    "the pod does not match its own terms": (
        [], {"app": "web"}, [term("zone", in_("app", "db"))], False
    ),
    "no required affinity": ([], {"app": "web"}, [], False),
}  # fmt: skip


@pytest.mark.parametrize("case", FIRST_OF_GROUP_CASES.values(), ids=FIRST_OF_GROUP_CASES.keys())
def test_the_cycle_state_says_when_the_first_pod_of_a_group_was_waived(case):
    existing, labels, affinity, waived = case
    snap = snapshot(cluster(), existing)
    state = CycleState()
    result = framework(snap).schedule_pod(
        snap, make_pod(fresh(), labels=labels, affinity=pod_affinity(affinity)), state=state
    )
    assert state.first_of_group is waived
    assert (result.node is None) is (not waived and bool(affinity) and not existing)
