"""Node labels as columns: codes, selectors, and the cache's lifetime."""

from __future__ import annotations

import numpy as np

from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from tests.builders import make_node, make_pod


def snapshot_with(*nodes: tuple[str, dict[str, str]]) -> Cache:
    snapshot = Cache()
    for name, labels in nodes:
        snapshot.add_node(make_node(name, labels=labels))
    return snapshot


def test_label_column_codes_values_and_missing() -> None:
    snapshot = snapshot_with(("a", {"zone": "z2"}), ("b", {}), ("c", {"zone": "z1"}))
    zone = snapshot.snapshot().attributes.label("zone")
    assert zone.values == ("z1", "z2")
    assert zone.codes.tolist() == [1, -1, 0]
    assert zone.present().tolist() == [True, False, True]
    assert zone.matches(["z1", "z9"]).tolist() == [False, False, True]
    assert [zone.value(r) for r in range(3)] == ["z2", None, "z1"]
    assert zone.code_of("z9") == -1


def test_columns_survive_pod_changes_and_are_rebuilt_when_a_node_changes() -> None:
    snapshot = snapshot_with(("a", {"zone": "z1"}))
    before = snapshot.snapshot().attributes
    snapshot.assume(PodInfo.of(make_pod("p", requests={"cpu": "100m"})), "a")
    assert snapshot.snapshot().attributes is before
    snapshot.add_node(make_node("a", labels={"zone": "z2"}))
    after = snapshot.snapshot().attributes
    assert after is not before
    assert after.label("zone").values == ("z2",)


def test_rows_follow_a_removed_node() -> None:
    snapshot = snapshot_with(("a", {"k": "1"}), ("b", {"k": "2"}), ("c", {"k": "3"}))
    snapshot.remove_node("a")
    table = snapshot.snapshot()
    column = table.attributes.label("k")
    assert [column.value(table.index[name]) for name in ("b", "c")] == ["2", "3"]
    assert np.array_equal(column.present(), np.ones(2, dtype=bool))


def test_taint_index_spreads_a_decision_per_distinct_taint() -> None:
    snapshot = Cache()
    snapshot.add_node(make_node("a", taints=[("k", "v", "NoSchedule"), ("x", "", "NoExecute")]))
    snapshot.add_node(make_node("b"))
    snapshot.add_node(make_node("c", taints=[("k", "v", "NoSchedule")]))
    index = snapshot.snapshot().attributes.taints()
    assert [t.key for t in index.taints] == ["k", "x"]
    assert index.rows_having(np.array([True, False])).tolist() == [True, False, True]
    assert index.rows_having(np.array([False, True])).tolist() == [True, False, False]
    assert index.count(np.array([True, True])).tolist() == [2, 0, 1]


def test_image_index_and_cordons() -> None:
    snapshot = Cache()
    snapshot.add_node(make_node("a", images=[(["img:1", "img:latest"], 10), (["img:1"], 20)]))
    snapshot.add_node(make_node("b", images=[(["img:1"], 30)], unschedulable=True))
    attributes = snapshot.snapshot().attributes
    rows, sizes = attributes.images().by_name["img:1"]
    assert (rows.tolist(), sizes.tolist()) == ([0, 1], [20, 30])  # a later image wins
    assert attributes.images().num_nodes("img:latest") == 1
    assert attributes.images().num_nodes("other") == 0
    assert attributes.unschedulable().tolist() == [False, True]


def test_memo_lives_as_long_as_the_nodes() -> None:
    snapshot = snapshot_with(("a", {"zone": "z1"}))
    built: list[int] = []

    def build() -> int:
        built.append(1)
        return len(built)

    assert snapshot.snapshot().attributes.memo(("test", 1), build) == 1
    snapshot.assume(PodInfo.of(make_pod("p")), "a")
    assert snapshot.snapshot().attributes.memo(("test", 1), build) == 1
    snapshot.add_node(make_node("b"))
    assert snapshot.snapshot().attributes.memo(("test", 1), build) == 2


def test_where_value_maps_a_decision_per_value() -> None:
    snapshot = snapshot_with(("a", {"v": "10"}), ("b", {}), ("c", {"v": "x"}))
    column = snapshot.snapshot().attributes.label("v")
    assert column.values == ("10", "x")
    assert column.where_value(np.array([True, False])).tolist() == [True, False, False]
