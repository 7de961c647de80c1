"""matchLabelKeys / mismatchLabelKeys merged into the selector, and namespaceSelector
handling (nil = own namespace, {} = all namespaces, resolved through the lister)."""

from __future__ import annotations

import msgspec

from contracts.k8s import LabelSelector, Namespace, ObjectMeta
from services.common.k8s.labels import label_selector_as_selector
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.interpodaffinity.terms import merge_label_keys, pod_terms
from tests.builders import make_node, make_pod
from tests.builders.selectors import pod_affinity
from tests.unit.framework.plugins.interpodaffinity.support import (
    exists,
    fresh,
    in_,
    plugin,
    run_filter,
    run_score,
    snapshot,
    term,
)

ANTI = Status(Code.Unschedulable, ("node(s) didn't match pod anti-affinity rules",))
EXISTING = Status(Code.Unschedulable, ("node(s) didn't satisfy existing pods anti-affinity rules",))
AFFINITY = Status(Code.UnschedulableAndUnresolvable, ("node(s) didn't match pod affinity rules",))
HOSTS = [make_node("n1", labels={"host": "n1"}), make_node("n2", labels={"host": "n2"})]


def test_match_label_keys_become_in_requirements_of_the_pods_own_labels():
    t = term("host", exists("app"), match_label_keys=["version", "absent"])
    merged = merge_label_keys(t, {"app": "web", "version": "v2"})
    assert merged is not None
    selector = label_selector_as_selector(merged)
    assert selector.matches({"app": "web", "version": "v2"})
    assert not selector.matches({"app": "web", "version": "v1"})
    assert not selector.matches({"app": "web"})


def test_mismatch_label_keys_become_not_in_requirements():
    t = term("host", exists("app"), mismatch_label_keys=["tenant"])
    selector = label_selector_as_selector(merge_label_keys(t, {"app": "x", "tenant": "a"}))
    assert selector.matches({"app": "x", "tenant": "b"})
    assert selector.matches({"app": "x"})
    assert not selector.matches({"app": "x", "tenant": "a"})


def test_label_keys_do_nothing_for_a_nil_selector():
    nil = msgspec.structs.replace(term("host", match_label_keys=["app"]), label_selector=None)
    assert merge_label_keys(nil, {"app": "x"}) is None


def test_anti_affinity_with_match_label_keys_only_counts_the_same_version():
    anti = [term("host", exists("app"), match_label_keys=["version"])]
    incoming = make_pod(
        fresh(), labels={"app": "web", "version": "v2"}, affinity=pod_affinity(anti=anti)
    )
    old = make_pod(fresh(), labels={"app": "web", "version": "v1"}, node_name="n1")
    same = make_pod(fresh(), labels={"app": "web", "version": "v2"}, node_name="n2")
    _, verdicts = run_filter(incoming, [old, same], HOSTS)
    assert verdicts == [None, ANTI]


def test_existing_pods_merge_their_own_labels():
    """The existing pod's matchLabelKeys take values from the existing pod's labels."""
    anti = [term("host", exists("app"), mismatch_label_keys=["tenant"])]
    runner = make_pod(
        fresh(),
        labels={"app": "db", "tenant": "a"},
        node_name="n1",
        affinity=pod_affinity(anti=anti),
    )
    same_tenant = make_pod(fresh(), labels={"app": "db", "tenant": "a"})
    other_tenant = make_pod(fresh(), labels={"app": "db", "tenant": "b"})
    assert run_filter(same_tenant, [runner], HOSTS)[0].is_skip()
    assert run_filter(other_tenant, [runner], HOSTS)[1] == [EXISTING, None]


def test_terms_with_label_keys_are_parsed_per_label_set():
    anti = [term("host", exists("app"), match_label_keys=["version"])]
    a = pod_terms(
        make_pod(fresh(), labels={"app": "x", "version": "1"}, affinity=pod_affinity(anti=anti))
    )
    b = pod_terms(
        make_pod(fresh(), labels={"app": "x", "version": "2"}, affinity=pod_affinity(anti=anti))
    )
    assert a != b
    assert a == pod_terms(
        make_pod(fresh(), labels={"app": "x", "version": "1"}, affinity=pod_affinity(anti=anti))
    )


def test_nil_namespace_selector_and_no_namespaces_mean_the_pods_namespace():
    affinity = [term("host", exists("app"))]
    incoming = make_pod(fresh(), "team-a", labels={"x": "y"}, affinity=pod_affinity(affinity))
    elsewhere = make_pod(fresh(), "team-b", labels={"app": "1"}, node_name="n1")
    here = make_pod(fresh(), "team-a", labels={"app": "1"}, node_name="n2")
    assert run_filter(incoming, [elsewhere], HOSTS)[1] == [AFFINITY, AFFINITY]
    assert run_filter(incoming, [elsewhere, here], HOSTS)[1] == [AFFINITY, None]


def test_empty_namespace_selector_means_every_namespace():
    anti = [term("host", exists("app"), namespace_selector=LabelSelector())]
    incoming = make_pod(fresh(), "team-a", affinity=pod_affinity(anti=anti))
    elsewhere = make_pod(fresh(), "team-b", labels={"app": "1"}, node_name="n1")
    assert run_filter(incoming, [elsewhere], HOSTS)[1] == [ANTI, None]


def test_namespace_selector_follows_the_namespace_lister():
    selector = LabelSelector(match_labels={"env": "prod"})
    anti = [term("host", exists("app"), namespace_selector=selector)]
    incoming = make_pod(fresh(), "mine", affinity=pod_affinity(anti=anti))
    other = make_pod(fresh(), "other", labels={"app": "1"}, node_name="n1")
    snap = snapshot(HOSTS, [other], namespaces=[])
    plug, table, info = plugin(snap), snap.snapshot(), PodInfo.of(incoming)

    def verdicts() -> list[bool]:
        state = CycleState()
        _, status = plug.pre_filter(state, info, table)
        assert status.is_success()
        return plug.filter_all(state, info, table).passed.tolist()

    assert verdicts() == [True, True]
    snap.listers.put(Namespace(metadata=ObjectMeta(name="other", labels={"env": "prod"})))
    assert verdicts() == [False, True]


def test_existing_pods_namespace_selector_is_matched_against_the_incoming_namespace():
    selector = LabelSelector(match_labels={"env": "prod"})
    runner = make_pod(
        fresh(),
        "x",
        node_name="n1",
        affinity=pod_affinity(anti=[term("host", exists("app"), namespace_selector=selector)]),
    )
    incoming = make_pod(fresh(), "shop", labels={"app": "1"})
    prod = [Namespace(metadata=ObjectMeta(name="shop", labels={"env": "prod"}))]
    dev = [Namespace(metadata=ObjectMeta(name="shop", labels={"env": "dev"}))]
    assert run_filter(incoming, [runner], HOSTS, namespaces=prod)[1] == [EXISTING, None]
    assert run_filter(incoming, [runner], HOSTS, namespaces=dev)[0].is_skip()
    assert run_filter(incoming, [runner], HOSTS, namespaces=[])[0].is_skip()


def test_preferred_terms_use_match_label_keys_too():
    preferred = [(10, term("host", exists("app"), match_label_keys=["version"]))]
    incoming = make_pod(
        fresh(), labels={"app": "web", "version": "v2"}, affinity=pod_affinity(preferred=preferred)
    )
    pods = [
        make_pod(fresh(), labels={"app": "web", "version": "v1"}, node_name="n1"),
        make_pod(fresh(), labels={"app": "web", "version": "v2"}, node_name="n2"),
    ]
    status, scores = run_score(incoming, pods, HOSTS)
    assert status.is_success()
    assert scores == [0, 100]


def test_in_requirement_from_match_labels():
    selector = label_selector_as_selector(LabelSelector(match_labels={"a": "b"}))
    assert selector.matches({"a": "b"}) and not selector.matches({"a": "c"})
    assert in_("a", "b").operator == "In"
