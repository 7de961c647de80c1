"""Cache: the log projection, this replica's assumptions and the store correction."""

from __future__ import annotations

import random

import msgspec
import pytest

from contracts.events import LogEntry, NamespaceEntry, NodeEntry, PodEntry
from contracts.k8s import Namespace, ObjectMeta
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from tests.builders import make_node, make_pod

MI = 1024 * 1024


def requested(snapshot: Cache, node: str) -> dict[str, int]:
    table = snapshot.snapshot()
    info = table.node_info(table.index[node])
    return {k: v for k, v in info.requested.items() if v}


def test_events_in_seq_order_and_terminal_pods():
    snapshot = Cache()
    events: list[LogEntry] = [
        NodeEntry(seq=1, type="ADDED", object=make_node("n1")),
        PodEntry(seq=2, type="ADDED", object=make_pod("a", node_name="n1", requests={"cpu": "1"})),
        PodEntry(seq=3, type="ADDED", object=make_pod("b", requests={"cpu": "1"})),
        NamespaceEntry(seq=4, type="ADDED", object=Namespace(metadata=ObjectMeta(name="x"))),
    ]
    assert snapshot.apply(events) == 4
    assert snapshot.applied_seq == 4
    assert requested(snapshot, "n1") == {"cpu": 1000, "pods": 1}
    assert snapshot.apply(events) == 0  # already applied
    done = make_pod("a", node_name="n1", requests={"cpu": "1"}, phase="Succeeded")
    snapshot.apply([PodEntry(seq=5, type="MODIFIED", object=done)])
    assert requested(snapshot, "n1") == {}
    bound = make_pod("b", node_name="n1", requests={"cpu": "1"})
    snapshot.apply([PodEntry(seq=6, type="MODIFIED", object=bound)])
    snapshot.apply([PodEntry(seq=7, type="DELETED", object=bound)])
    assert requested(snapshot, "n1") == {}


def test_nonzero_requested_for_scoring():
    snapshot = Cache()
    snapshot.add_node(make_node("n1"))
    snapshot.add_pod(make_pod("a", node_name="n1", containers=1))
    info = snapshot.snapshot().node_info(0)
    assert info.nonzero_requested == {"cpu": 100, "memory": 200 * MI}
    assert info.requested["cpu"] == 0


def test_pods_outlive_their_node_and_are_counted_when_it_comes_back():
    snapshot = Cache()
    snapshot.add_pod(make_pod("early", node_name="n2", requests={"example.com/gpu": "1"}))
    snapshot.add_node(make_node("n1"))
    snapshot.add_node(make_node("n2"))
    assert requested(snapshot, "n2") == {"example.com/gpu": 1, "pods": 1}
    snapshot.remove_node("n1")  # swaps n2 into row 0
    assert snapshot.snapshot().names == ["n2"]
    assert requested(snapshot, "n2") == {"example.com/gpu": 1, "pods": 1}
    snapshot.remove_node("n2")
    snapshot.add_node(make_node("n2"))
    assert requested(snapshot, "n2") == {"example.com/gpu": 1, "pods": 1}


def test_assume_forget_expire_and_binding_replaces_the_assumption():
    snapshot = Cache()
    snapshot.add_node(make_node("n1"))
    snapshot.add_node(make_node("n2"))
    pod = make_pod("p", requests={"cpu": "1"})
    snapshot.assume(PodInfo.of(pod), "n1", deadline=100.0)
    assert requested(snapshot, "n1") == {"cpu": 1000, "pods": 1}
    assert snapshot.assumed_node(pod.metadata.uid) == "n1"
    snapshot.assume(PodInfo.of(pod), "n2", deadline=100.0)  # a new attempt moves it
    assert requested(snapshot, "n1") == {}
    assert snapshot.expire_assumed(now=50.0) == []
    assert snapshot.expire_assumed(now=100.5) == [pod.metadata.uid]
    assert requested(snapshot, "n2") == {}
    snapshot.assume(PodInfo.of(pod), "n1")
    snapshot.add_pod(make_pod("p", node_name="n1", requests={"cpu": "1"}))
    assert requested(snapshot, "n1") == {"cpu": 1000, "pods": 1}  # not twice
    assert snapshot.assumed_node(pod.metadata.uid) is None
    assert snapshot.is_bound(pod.metadata.uid)


def test_pending_update_keeps_the_assumption():
    snapshot = Cache()
    snapshot.add_node(make_node("n1"))
    pod = make_pod("p", requests={"cpu": "1"})
    snapshot.assume(PodInfo.of(pod), "n1")
    snapshot.add_pod(pod)  # a status update of the still pending pod
    assert requested(snapshot, "n1") == {"cpu": 1000, "pods": 1}


def test_correct_usage_until_the_next_event_for_the_node():
    snapshot = Cache()
    snapshot.add_node(make_node("n1"))
    snapshot.add_node(make_node("n2"))
    snapshot.add_pod(make_pod("a", node_name="n1", requests={"cpu": "1"}))
    snapshot.correct_usage("n1", {"cpu": 3000, "pods": 3, "example.com/gpu": 1})
    assert requested(snapshot, "n1") == {"cpu": 3000, "pods": 3, "example.com/gpu": 1}
    snapshot.add_pod(make_pod("other", node_name="n2"))  # another node: kept
    assert requested(snapshot, "n1")["cpu"] == 3000
    snapshot.add_pod(make_pod("b", node_name="n1", requests={"cpu": "1"}))
    assert requested(snapshot, "n1") == {"cpu": 2000, "pods": 2}


def test_load_from_store_objects():
    encode = msgspec.json.encode
    nodes = {"n1": encode(make_node("n1", allocatable={"cpu": "2", "pods": 10}))}
    bound = make_pod("a", node_name="n1", requests={"cpu": "500m"})
    pods = {"default/a": encode(bound), "default/b": encode(make_pod("b"))}
    snapshot = Cache()
    snapshot.add_node(make_node("stale"))
    by_uid = snapshot.load(nodes, pods, seq=42)
    assert snapshot.applied_seq == 42
    assert snapshot.snapshot().names == ["n1"]
    assert set(by_uid) == {"default-a-uid", "default-b-uid"}
    assert requested(snapshot, "n1") == {"cpu": 500, "pods": 1}


def test_with_pods_view_adds_pods_to_a_subset():
    snapshot = Cache()
    for name in ("a", "b", "c"):
        snapshot.add_node(make_node(name))
    table = snapshot.snapshot()
    extra = PodInfo.of(make_pod("x", requests={"cpu": "1", "example.com/gpu": "1"}))
    view = table.with_pods([2], {2: [extra]})
    assert view.names == ["c"]
    assert view.node_info(0).requested["example.com/gpu"] == 1
    assert view.node_info(0).requested["pods"] == 1
    assert table.node_info(2).requested["pods"] == 0  # the snapshot is untouched


def test_pods_with_pod_affinity_are_counted_as_they_come_and_go():
    """Snapshot.affinity_pods: InterPodAffinity skips without its index at 0."""
    from contracts.k8s import Affinity, LabelSelector, PodAffinity, PodAffinityTerm

    term = PodAffinityTerm(label_selector=LabelSelector(match_labels={"a": "b"}), topology_key="z")
    anti = Affinity(
        pod_anti_affinity=PodAffinity(required_during_scheduling_ignored_during_execution=[term])
    )
    cache = Cache()
    cache.add_node(make_node("n1"))
    plain = make_pod("plain", node_name="n1")
    with_anti = make_pod("anti", node_name="n2", affinity=anti)
    steps = [
        (lambda: cache.add_pod(plain), 0),
        (lambda: cache.add_pod(with_anti), 0),  # n2 is not in the snapshot yet
        (lambda: cache.add_node(make_node("n2")), 1),
        (lambda: cache.assume(PodInfo.of(make_pod("p2", affinity=anti)), "n1"), 2),
        (lambda: cache.forget("default-p2-uid"), 1),
        (lambda: cache.remove_node("n2"), 0),
        (lambda: cache.add_node(make_node("n2")), 1),
        (lambda: cache.remove_pod("default-anti-uid"), 0),
    ]
    for step, expected in steps:
        step()
        assert cache.snapshot().affinity_pods == expected


@pytest.mark.parametrize(
    ("nodes", "extended"),
    [
        (3, 0),  # within the first allocation
        (40, 0),  # rows grown twice
        (5, 9),  # columns grown past the first eight
        (40, 9),  # both
    ],
)
def test_columns_are_contiguous_and_keep_their_values_as_the_table_grows(nodes, extended):
    """The cycle reads one resource of every node at a time: each column of the
    snapshot's tables is one contiguous run, also after the tables grew."""
    cache = Cache()
    resources = {f"example.com/r{i}": str(i + 1) for i in range(extended)}
    for i in range(nodes):
        cache.add_node(make_node(f"n{i}", allocatable={"cpu": str(i + 1), **resources}))
        cache.add_pod(make_pod(f"p{i}", node_name=f"n{i}", requests={"cpu": "1"}))
    table = cache.snapshot()
    for array in (table.allocatable, table.requested, table.nonzero_requested):
        for col in range(array.shape[1]):
            assert array[:, col].flags["C_CONTIGUOUS"], col
    cpu = table.resources["cpu"]
    assert table.allocatable[:, cpu].tolist() == [1000 * (i + 1) for i in range(nodes)]
    assert table.requested[:, cpu].tolist() == [1000] * nodes
    for i in range(extended):
        column = table.resources[f"example.com/r{i}"]
        assert table.allocatable[:, column].tolist() == [i + 1] * nodes


@pytest.mark.parametrize("seed", range(30))
def test_num_pods_counts_every_pod_on_a_node_through_any_sequence(seed):
    """The pod count kept as pods come and go equals a count of the pods on nodes
    (bound or assumed, also on nodes the snapshot lacks), after every step."""
    rng = random.Random(seed)
    cache = Cache()
    nodes = [f"n{i}" for i in range(4)]
    pods = [f"p{i}" for i in range(12)]

    def counted() -> int:
        return sum(len(on_node) for on_node in cache._pods_on.values())

    for _ in range(120):
        step = rng.choice(["node", "unnode", "bind", "pending", "done", "delete", "assume",
                           "forget", "expire", "load"])  # fmt: skip
        name, node = rng.choice(pods), rng.choice(nodes)
        if step == "node":
            cache.add_node(make_node(node))
        elif step == "unnode":
            cache.remove_node(node)
        elif step in ("bind", "pending", "done"):
            phase = "Succeeded" if step == "done" else "Running"
            bound = None if step == "pending" else node
            cache.add_pod(make_pod(name, uid=name, node_name=bound, phase=phase))
        elif step == "delete":
            cache.remove_pod(name)
        elif step == "assume" and not cache.is_bound(name):  # as the scheduler does
            cache.assume(PodInfo.of(make_pod(name, uid=name)), node, rng.choice([1.0, 5.0]))
        elif step == "forget":
            cache.forget(name)
        elif step == "expire":
            cache.expire_assumed(3.0)
        elif step == "load":
            pod = make_pod(name, uid=name, node_name=node)
            cache.load({node: msgspec.json.encode(make_node(node))},
                       {name: msgspec.json.encode(pod)}, 1)  # fmt: skip
        assert cache.num_pods == counted(), step
