"""PodIndex: the per-node counts it keeps across snapshot changes always equal a fresh
count (``countPodsMatchSelector`` on every node)."""

from __future__ import annotations

import random

import msgspec

from services.common.k8s.labels import (
    EVERYTHING,
    NOTHING,
    Selector,
    label_selector_as_selector,
)
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.podtopologyspread.podindex import PodIndex, count_in
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.podtopologyspread.helpers import FOO, labels

FOO_SEL = label_selector_as_selector(FOO)
BLUE = label_selector_as_selector(labels(color="blue"))


def fresh(nodes: Snapshot, namespace: str, selector: Selector) -> list[int]:
    return [count_in(nodes.pods[row], namespace, selector) for row in range(nodes.num_nodes)]


def check(index: PodIndex, snapshot: Cache, *selectors: Selector) -> None:
    nodes = snapshot.snapshot()
    for selector in selectors or (FOO_SEL, BLUE):
        for namespace in ("default", "other"):
            got = index.row_counts(nodes, namespace, selector).tolist()
            assert got == fresh(nodes, namespace, selector), (namespace, selector)


def cluster(n: int = 4) -> Cache:
    snapshot = Cache()
    for i in range(n):
        snapshot.add_node(make_node(f"n{i}", labels={"zone": f"z{i % 2}"}))
    return snapshot


def test_assume_bind_relabel_swap_and_terminate():
    snapshot, index = cluster(), PodIndex()
    snapshot.add_pod(make_pod("a", node_name="n0", labels={"foo": ""}))
    check(index, snapshot)
    snapshot.assume(PodInfo.of(make_pod("b", labels={"foo": ""})), "n1")
    check(index, snapshot)
    snapshot.add_pod(
        make_pod("b", node_name="n1", labels={"foo": ""})
    )  # the binding replaces the assumption
    check(index, snapshot)
    snapshot.add_pod(
        make_pod("a", node_name="n0", labels={"color": "blue"})
    )  # same requests, new labels
    check(index, snapshot)
    snapshot.remove_pod(PodInfo.of(make_pod("a", node_name="n0")).uid)  # a swap within one batch
    snapshot.add_pod(make_pod("c", node_name="n0", labels={"foo": ""}))
    check(index, snapshot)
    snapshot.add_pod(make_pod("c", node_name="n0", labels={"foo": ""}, terminating=True))
    check(index, snapshot)
    snapshot.add_pod(make_pod("d", "other", node_name="n2", labels={"foo": ""}))
    check(index, snapshot)


def test_nodes_added_and_removed():
    snapshot, index = cluster(2), PodIndex()
    snapshot.add_pod(make_pod("a", node_name="n1", labels={"foo": ""}))
    check(index, snapshot)
    snapshot.add_node(make_node("n9"))
    snapshot.add_pod(make_pod("b", node_name="n9", labels={"foo": ""}))
    check(index, snapshot)
    snapshot.remove_node("n0")  # n9 moves into row 0
    check(index, snapshot)
    snapshot.add_node(make_node("n1", labels={"zone": "z9"}))  # an update keeps the rows
    check(index, snapshot)


def test_empty_and_nothing_selectors_count_nothing():
    snapshot, index = cluster(2), PodIndex()
    snapshot.add_pod(make_pod("a", node_name="n1", labels={"foo": ""}))
    nodes = snapshot.snapshot()
    assert index.row_counts(nodes, "default", EVERYTHING).tolist() == [0, 0]
    assert index.row_counts(nodes, "default", NOTHING).tolist() == [0, 0]


def test_another_snapshot_starts_over():
    first, second, index = cluster(), cluster(), PodIndex()
    first.add_pod(make_pod("a", node_name="n0", labels={"foo": ""}))
    second.add_pod(make_pod("a", node_name="n3", labels={"foo": ""}))
    check(index, first)
    check(index, second)
    check(index, first)


def test_least_recently_used_selectors_are_dropped():
    snapshot, index = cluster(), PodIndex(max_selectors=2)
    snapshot.add_pod(make_pod("a", node_name="n0", labels={"foo": "", "color": "blue"}))
    others = [label_selector_as_selector(labels(k="v")), FOO_SEL, BLUE]
    for selector in others:
        check(index, snapshot, selector)
    snapshot.add_pod(make_pod("b", node_name="n2", labels={"foo": "", "color": "blue"}))
    check(index, snapshot, *others)


def test_random_changes():
    rng = random.Random(7)
    snapshot, index = cluster(6), PodIndex(max_selectors=3)
    selectors = [FOO_SEL, BLUE, label_selector_as_selector(labels(color="red"))]
    live: dict[str, str] = {}
    for step in range(400):
        name = f"p{rng.randrange(30)}"
        action = rng.random()
        if action < 0.45:
            node = f"n{rng.randrange(6)}"
            pod_labels = rng.choice([{"foo": ""}, {"color": "blue"}, {"color": "red"}, {}])
            namespace = rng.choice(["default", "default", "other"])
            created = make_pod(name, namespace, node_name=node, labels=pod_labels)
            created = msgspec.structs.replace(
                created, metadata=msgspec.structs.replace(created.metadata, uid=name)
            )
            snapshot.add_pod(created)
            live[name] = node
        elif action < 0.7 and live:
            gone = rng.choice(sorted(live))
            snapshot.remove_pod(gone)
            del live[gone]
        elif action < 0.8:
            snapshot.assume(
                PodInfo.of(make_pod(f"assumed{step}", labels={"foo": ""})), f"n{rng.randrange(6)}"
            )
        if rng.random() < 0.5:
            check(index, snapshot, *rng.sample(selectors, 2))
