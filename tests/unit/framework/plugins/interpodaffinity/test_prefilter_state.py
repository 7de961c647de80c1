"""PreFilter state: upstream's TestPreFilterStateAddRemovePod, TestPreFilterStateClone,
TestPreFilterDisabled and TestGetTPMapMatchingIncomingAffinityAntiAffinity."""

from __future__ import annotations

import pytest

from contracts.k8s import Affinity, PodAffinity
from services.framework.api.interface import CycleState
from services.framework.api.status import StatusError
from services.framework.api.types import PodInfo
from services.framework.plugins.interpodaffinity import filtering
from services.framework.plugins.interpodaffinity.incoming import IncomingPod
from services.framework.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY
from services.framework.plugins.interpodaffinity.terms import pod_terms
from tests.builders import make_node, make_pod
from tests.builders.selectors import pod_affinity
from tests.unit.framework.plugins.interpodaffinity.support import (
    exists,
    fresh,
    in_,
    not_in,
    plugin,
    snapshot,
    term,
    with_affinity,
)

LABEL1 = {"region": "r1", "zone": "z11"}
LABEL2 = {"region": "r1", "zone": "z12"}
LABEL3 = {"region": "r2", "zone": "z21"}
SELECTOR1 = {"foo": "bar"}
NODES = [
    make_node("nodeA", labels=LABEL1),
    make_node("nodeB", labels=LABEL2),
    make_node("nodeC", labels=LABEL3),
]
ANTI_FOO_BAR = PodAffinity(
    required_during_scheduling_ignored_during_execution=[term("region", in_("foo", "bar"))]
)
COMPLEX_TERMS = [
    term("region", in_("foo", "bar", "buzz")),
    term("zone", not_in("service", "bar", "security", "test")),
]
ANTI_COMPLEX = PodAffinity(required_during_scheduling_ignored_during_execution=COMPLEX_TERMS)
AFFINITY_COMPLEX = PodAffinity(required_during_scheduling_ignored_during_execution=COMPLEX_TERMS)


def _pod(name, labels=None, node_name=None, anti=None, affinity=None):
    return with_affinity(
        make_pod(name, labels=labels, node_name=node_name),
        Affinity(pod_affinity=affinity, pod_anti_affinity=anti),
    )


ADD_REMOVE_CASES = [
    (
        "anti-affinity counts after adding and removing a pod",
        _pod("pending", SELECTOR1, anti=ANTI_FOO_BAR),
        [_pod("p1", SELECTOR1, "nodeA"), _pod("p2", None, "nodeC", anti=ANTI_FOO_BAR)],
        _pod("addedPod", SELECTOR1, "nodeB", anti=ANTI_FOO_BAR),
        {("region", "r1"): 2},
        {},
    ),
    (
        "complex anti-affinity counts after adding and removing a pod",
        _pod("pending", SELECTOR1, anti=ANTI_COMPLEX),
        [_pod("p1", SELECTOR1, "nodeA"), _pod("p2", None, "nodeC", anti=ANTI_FOO_BAR)],
        _pod("addedPod", SELECTOR1, "nodeA", anti=ANTI_COMPLEX),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
    ),
    (
        "affinity and anti-affinity counts after adding and removing a pod",
        _pod("pending", SELECTOR1, affinity=AFFINITY_COMPLEX),
        [
            _pod("p1", SELECTOR1, "nodeA"),
            _pod("p2", None, "nodeC", anti=ANTI_FOO_BAR, affinity=AFFINITY_COMPLEX),
        ],
        _pod("addedPod", SELECTOR1, "nodeA", anti=ANTI_COMPLEX),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
]


def _state(pending, pods):
    snap = snapshot(NODES, pods)
    plug, state = plugin(snap), CycleState()
    _, status = plug.pre_filter(state, PodInfo.of(pending), snap.snapshot())
    assert status.is_success()
    return plug, state, state.read(PRE_FILTER_STATE_KEY, filtering.PreFilterState)


def _counts(s: filtering.PreFilterState):
    return (s.existing_anti.as_dict(), s.affinity.as_dict(), s.anti.as_dict())


@pytest.mark.parametrize(
    ("pending", "existing", "added", "want_anti", "want_affinity"),
    [pytest.param(*case[1:], id=case[0]) for case in ADD_REMOVE_CASES],
)
def test_add_and_remove_pod_update_the_state(pending, existing, added, want_anti, want_affinity):
    _, _, all_pods = _state(pending, [*existing, added])
    plug, cycle, computed = _state(pending, existing)
    original = computed.clone()

    info = PodInfo.of(added)
    status = plug.add_pod(cycle, PodInfo.of(pending), info, added.spec.node_name)
    assert status.is_success()
    assert computed.anti.as_dict() == want_anti
    assert computed.affinity.as_dict() == want_affinity
    assert _counts(computed) == _counts(all_pods)

    status = plug.remove_pod(cycle, PodInfo.of(pending), info, added.spec.node_name)
    assert status.is_success()
    assert _counts(computed) == _counts(original)


def test_add_pod_to_an_unknown_node_is_an_error():
    plug, cycle, _ = _state(_pod("pending", SELECTOR1, anti=ANTI_FOO_BAR), [])
    status = plug.add_pod(
        cycle, PodInfo.of(make_pod(fresh())), PodInfo.of(make_pod(fresh())), "nowhere"
    )
    assert not status.is_success() and not status.is_rejected()


def test_clone_copies_the_counts():
    _, _, computed = _state(
        _pod("pending", SELECTOR1, anti=ANTI_COMPLEX),
        [_pod("p1", SELECTOR1, "nodeA"), _pod("p2", None, "nodeC", anti=ANTI_FOO_BAR)],
    )
    clone = computed.clone()
    assert clone is not computed
    assert _counts(clone) == _counts(computed)
    clone.anti.update("zone", "z12", 5)
    clone.existing_anti.update("region", "r2", 1)
    assert _counts(clone) != _counts(computed)


def test_filter_without_pre_filter_is_an_error():
    snap = snapshot([make_node("n", labels={})])
    with pytest.raises(StatusError) as err:
        plugin(snap).filter_all(CycleState(), PodInfo.of(make_pod(fresh())), snap.snapshot())
    assert err.value.status.message() == (
        'error reading "PreFilterInterPodAffinity" from cycleState: not found'
    )


def _normal(*labels: str):
    return make_pod("normal", labels=dict.fromkeys(labels, ""), node_name="nodeA")


NODE_A = make_node("nodeA", labels={"hostname": "nodeA"})
HOST = "hostname"
INCOMING_CASES = [
    ("nil test", [], make_pod("aaa-normal"), {}, {}),
    ("incoming pod without affinity is a no-op", [_normal("aaa")], make_pod("aaa-normal"), {}, {}),
    (
        "no pod matches the incoming affinity and anti-affinity",
        [_normal("bbb")],
        make_pod(
            "aaa-anti",
            affinity=pod_affinity([term(HOST, exists("aaa"))], anti=[term(HOST, exists("aaa"))]),
        ),
        {},
        {},
    ),
    (
        "existing pod matches affinity and anti-affinity, single term",
        [_normal("aaa")],
        make_pod(
            "affi-antiaffi",
            affinity=pod_affinity([term(HOST, exists("aaa"))], anti=[term(HOST, exists("aaa"))]),
        ),
        {(HOST, "nodeA"): 1},
        {(HOST, "nodeA"): 1},
    ),
    (
        "existing pod matches affinity and anti-affinity, several terms",
        [_normal("aaa", "bbb")],
        make_pod(
            "affi-antiaffi",
            affinity=pod_affinity(
                [term(HOST, exists("aaa")), term(HOST, exists("bbb"))],
                anti=[term(HOST, exists("aaa"))],
            ),
        ),
        {(HOST, "nodeA"): 2},
        {(HOST, "nodeA"): 1},
    ),
    (
        "existing pod does not match the affinity but matches the anti-affinity",
        [_normal("aaa")],
        make_pod(
            "affi-antiaffi",
            affinity=pod_affinity(
                [term(HOST, exists("aaa")), term(HOST, exists("bbb"))],
                anti=[term(HOST, exists("aaa")), term(HOST, exists("bbb"))],
            ),
        ),
        {},
        {(HOST, "nodeA"): 1},
    ),
    (
        "anti-affinity with several terms, existing pod violates one (case 1)",
        [_normal("aaa", "bbb")],
        make_pod(
            "anaffi-antiaffiti",
            affinity=pod_affinity(
                [term(HOST, exists("aaa")), term(HOST, exists("ccc"))],
                anti=[term(HOST, exists("aaa")), term(HOST, exists("ccc"))],
            ),
        ),
        {},
        {(HOST, "nodeA"): 1},
    ),
    (
        "anti-affinity with several terms, existing pod violates one (case 2)",
        [_normal("bbb")],
        make_pod(
            "affi-antiaffi",
            affinity=pod_affinity(
                [term(HOST, exists("aaa")), term(HOST, exists("bbb"))],
                anti=[term(HOST, exists("aaa")), term(HOST, exists("bbb"))],
            ),
        ),
        {},
        {(HOST, "nodeA"): 1},
    ),
]


@pytest.mark.parametrize(
    ("existing", "incoming", "want_affinity", "want_anti"),
    [pytest.param(*case[1:], id=case[0]) for case in INCOMING_CASES],
)
def test_incoming_affinity_and_anti_affinity_counts(existing, incoming, want_affinity, want_anti):
    snap = snapshot([NODE_A], existing)
    plug, table = plugin(snap), snap.snapshot()
    pending = IncomingPod.of(PodInfo.of(incoming), pod_terms(incoming), snap.listers.namespaces)
    computed = filtering.pre_filter_state(plug.index(table), table, pending)
    assert computed.affinity.as_dict() == want_affinity
    assert computed.anti.as_dict() == want_anti
