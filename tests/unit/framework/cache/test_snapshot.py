"""The per-cycle Snapshot's views: ``with_pods`` adds pods to a subset of rows,
``without_pods`` takes them away again (preemption's "remove the victims and filter
again"), charging requests, the pod count and the non-zero requests back exactly."""

from __future__ import annotations

import numpy as np
import pytest

from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot
from tests.builders import make_node, make_pod
from tests.unit.framework.helpers import snapshot_of


def _table() -> Snapshot:
    nodes = [make_node(n, allocatable={"cpu": "4", "memory": "8Gi", "pods": 10}) for n in "abc"]
    bound = [
        make_pod("on-a", node_name="a", requests={"cpu": "500m", "memory": "1Gi"}),
        make_pod("on-b", node_name="b", requests={"cpu": "1"}),
    ]
    return snapshot_of(nodes, bound).snapshot()


def _info(name: str, requests: dict[str, str], node: str | None = None) -> PodInfo:
    return PodInfo.of(make_pod(name, node_name=node, requests=requests))


@pytest.mark.parametrize(
    ("rows", "pods"),
    [
        ([0], {0: [_info("x", {"cpu": "1"})]}),
        ([1, 2], {1: [_info("x", {"cpu": "250m", "memory": "1Gi"}), _info("y", {})]}),
        ([2], {2: [_info("gpu", {"cpu": "1", "example.com/gpu": "2"})]}),
        ([0, 1, 2], {0: [_info("x", {})], 2: [_info("y", {"memory": "2Gi"})]}),
    ],
    ids=["one pod", "two pods, one without requests", "a new resource column", "two rows"],
)
def test_adding_then_removing_gives_back_the_columns(rows, pods):
    table = _table()
    added = table.with_pods(rows, pods)
    # with_pods renumbers: row r of the table is row rows.index(r) of the view.
    back = added.without_pods(range(len(rows)), {rows.index(r): p for r, p in pods.items()})
    take = np.asarray(rows)
    width = len(table.resources)
    assert back.resources == added.resources
    assert back.requested[:, :width].tolist() == table.requested[take].tolist()
    assert not back.requested[:, width:].any()  # a column added for the pods stays, at 0
    assert back.allocatable[:, :width].tolist() == table.allocatable[take].tolist()
    assert back.nonzero_requested.tolist() == table.nonzero_requested[take].tolist()
    assert [dict(p) for p in back.pods] == [dict(table.pods[r]) for r in rows]
    assert back.names == [table.names[r] for r in rows]


def test_removing_a_bound_pod_frees_what_it_requested():
    table = _table()
    victim = table.pods[0]["default-on-a-uid"]
    view = table.without_pods([0, 1], {0: [victim]})
    assert view.node_info(0).requested == {"cpu": 0, "memory": 0, "ephemeral-storage": 0, "pods": 0}
    assert view.nonzero_requested[0].tolist() == [0, 0]
    assert dict(view.pods[0]) == {}
    assert view.node_info(1).requested["cpu"] == 1000  # rows not named keep their pods
    assert table.node_info(0).requested["pods"] == 1  # the table itself is untouched
    assert (view.pod_versions == -1).all()  # indexes over pods must look again


@pytest.mark.parametrize(
    ("row", "pod"),
    [
        (2, _info("nowhere", {"cpu": "1"})),
        (1, _info("on-a", {"cpu": "500m", "memory": "1Gi"}, node="a")),  # on another row
    ],
    ids=["a pod on no node", "a pod on another node"],
)
def test_removing_a_pod_not_on_the_row_is_an_error(row, pod):
    with pytest.raises(ValueError, match=f"pod default/{pod.pod.metadata.name} is not on node"):
        _table().without_pods([row], {row: [pod]})


def test_removing_a_pod_twice_is_an_error():
    table = _table()
    victim = table.pods[0]["default-on-a-uid"]
    with pytest.raises(ValueError, match="a pod is named twice for node a"):
        table.without_pods([0], {0: [victim, victim]})


@pytest.mark.parametrize(
    ("rows", "removed", "left"),
    [
        ([0, 1], {0: ["on-a"]}, [[], ["on-b"]]),
        ([1, 0], {0: ["on-a"], 1: ["on-b"]}, [[], []]),
        ([0, 1, 2], {1: ["on-b"], 2: []}, [["on-a"], [], []]),
    ],
    ids=["one row emptied", "both rows emptied, reordered", "an empty removal"],
)
def test_a_row_whose_every_pod_is_removed_counts_nothing(rows, removed, left):
    table = _table()
    uids = {r: [table.pods[r][f"default-{n}-uid"] for n in names] for r, names in removed.items()}
    view = table.without_pods(rows, uids)
    for i, row in enumerate(rows):
        names = sorted(p.pod.metadata.name for p in view.pods[i].values())
        assert names == left[i]
        if not names:
            assert not view.requested[i].any() and not view.nonzero_requested[i].any()
        else:
            assert view.requested[i].tolist() == table.requested[row].tolist()
    # Reprieving onto a cleared row copies its (shared, empty) map.
    cleared = [i for i in range(len(rows)) if not left[i]]
    back = {i: list(table.pods[rows[i]].values()) for i in cleared}
    view.adjust(back, +1)
    for i in cleared:
        assert view.requested[i].tolist() == table.requested[rows[i]].tolist()
        assert dict(view.pods[i]) == dict(table.pods[rows[i]])


@pytest.mark.parametrize(
    "pods",
    [
        {0: [_info("x", {"cpu": "1"})]},
        {1: [_info("x", {"cpu": "250m", "memory": "1Gi"}), _info("y", {})], 2: [_info("z", {})]},
    ],
    ids=["one row", "two rows"],
)
def test_adjusting_a_view_in_place_charges_as_with_pods(pods):
    table = _table()
    view = table.with_pods([0, 1, 2], {})
    expected = view.with_pods([0, 1, 2], pods)
    before = view.pod_versions.copy()
    shared = view.pods[1]
    view.adjust(pods, +1)
    assert (view.requested == expected.requested).all()
    assert (view.nonzero_requested == expected.nonzero_requested).all()
    assert [dict(m) for m in view.pods] == [dict(m) for m in expected.pods]
    changed = sorted(pods)
    assert (view.pod_versions[changed] != before[changed]).all()  # row caches look again
    assert shared is not view.pods[1] or 1 not in pods  # a shared map is never mutated
    view.adjust(pods, -1)
    plain = table.with_pods([0, 1, 2], {})
    assert (view.requested == plain.requested).all()
    assert [dict(m) for m in view.pods] == [dict(m) for m in plain.pods]


@pytest.mark.parametrize(
    "rows",
    [[0], [1, 0], [2], [0, 1, 2], [2, 0]],
    ids=["a row with pods", "two rows reordered", "a row without pods", "every row", "mixed"],
)
def test_removing_every_pod_of_its_rows_empties_them(rows):
    table = snapshot_of(
        [make_node(n, allocatable={"cpu": "4", "memory": "8Gi", "pods": 10}) for n in "abc"],
        [
            make_pod("a1", node_name="a", requests={"cpu": "500m", "memory": "1Gi"}),
            make_pod("a2", node_name="a", requests={"cpu": "1", "example.com/gpu": "2"}),
            make_pod("b1", node_name="b", requests={}),  # non-zero defaults
        ],
    ).snapshot()
    emptied = table.without_pods(rows, {r: list(table.pods[r].values()) for r in rows})
    assert emptied.names == [table.names[r] for r in rows]
    assert emptied.index == {table.names[r]: i for i, r in enumerate(rows)}
    assert emptied.resources == table.resources
    assert emptied.allocatable.tolist() == table.allocatable[rows].tolist()
    assert not emptied.requested.any()
    assert not emptied.nonzero_requested.any()
    assert [dict(m) for m in emptied.pods] == [{} for _ in rows]
    assert (emptied.pod_versions == -1).all()
    assert table.node_info(0).requested["pods"] == 2  # the table itself is untouched
    # A dry run reprieves victims onto an emptied view in place.
    if 0 in rows:
        i = rows.index(0)
        back = list(table.pods[0].values())
        emptied.adjust({i: back}, +1)
        assert emptied.requested[i].tolist() == table.requested[0].tolist()
        assert dict(emptied.pods[i]) == dict(table.pods[0])
        assert [dict(m) for k, m in enumerate(emptied.pods) if k != i] == [{}] * (len(rows) - 1)


@pytest.mark.parametrize(
    ("pods", "undone"),
    [
        ({0: [_info("x", {"cpu": "1"})]}, [0]),
        ({1: [_info("x", {"cpu": "250m", "memory": "1Gi"})], 2: [_info("y", {})]}, [2]),
        ({0: [_info("x", {})], 1: [_info("y", {"memory": "1Gi"})]}, [1, 0]),
        ({0: [_info("x", {"cpu": "1"})]}, []),
    ],
    ids=["the only row", "one of two rows", "both rows, reordered", "none"],
)
def test_undo_takes_an_adjustment_back_on_some_rows(pods, undone):
    table = _table()
    view = table.with_pods([0, 1, 2], {})
    plain = view.with_pods([0, 1, 2], {})
    maps = list(view.pods)
    done = view.adjust(pods, +1)
    added = view.with_pods([0, 1, 2], {})
    versions = view.pod_versions.copy()
    view.undo(done, undone)
    for row in range(3):
        expected = plain if row in undone else added
        assert view.requested[row].tolist() == expected.requested[row].tolist()
        assert view.nonzero_requested[row].tolist() == expected.nonzero_requested[row].tolist()
        assert dict(view.pods[row]) == dict(expected.pods[row])
        if row in undone:
            assert view.pods[row] is maps[row]  # the map as it was, not a copy
            assert view.pod_versions[row] not in (versions[row], -1)  # fresh
        else:
            assert view.pod_versions[row] == versions[row]
