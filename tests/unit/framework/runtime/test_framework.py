"""Framework.schedule_pod: FitError messages, selection, tie-breaking, nominated pods."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from services.framework.api.interface import CycleState, PreFilterResult
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.filtering import NominatedPods
from services.framework.runtime.framework import Framework
from tests.builders import make_node, make_pod
from tests.unit.framework.fakes import (
    FixedPreFilter,
    FixedScore,
    NeedsCompany,
    RejectNodes,
    framework_with,
)
from tests.unit.framework.helpers import snapshot_of


def default_framework(seed: int | None = 0) -> Framework:
    return Framework(default_profile(), in_tree_registry(), rng=random.Random(seed))


ALLOCATABLE = {"cpu": "4", "memory": "8Gi", "pods": 110}


def test_fit_error_message_counts_every_reason_over_nodes():
    nodes = [
        make_node("cpu-short", allocatable={**ALLOCATABLE, "cpu": "1"}),
        make_node("both-short", allocatable={**ALLOCATABLE, "cpu": "1", "memory": "1Gi"}),
        make_node("full", allocatable={**ALLOCATABLE, "pods": 1}),
        make_node("also-cpu-short", allocatable={**ALLOCATABLE, "cpu": "1"}),
    ]
    bound = [make_pod("running", node_name="full")]
    result = default_framework().schedule_pod(
        snapshot_of(nodes, bound), make_pod(requests={"cpu": "2", "memory": "2Gi"})
    )
    assert result.node is None
    assert result.status.code == Code.Unschedulable
    assert result.message == (
        "0/4 nodes are available: 1 Insufficient memory, 1 Too many pods, 3 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
    )
    assert result.unschedulable_plugins == {"NodeResourcesFit"}
    assert result.fit_error is not None
    diagnosis = result.fit_error.diagnosis
    assert not diagnosis.all_unresolvable
    row = snapshot_of(nodes, bound).snapshot().index["both-short"]
    assert diagnosis.node_status(row) == Status(
        Code.Unschedulable, ("Insufficient cpu", "Insufficient memory"), "NodeResourcesFit"
    )


def test_fit_error_histogram_is_sorted_as_go_strings():
    nodes = [make_node(f"small{i}", allocatable={**ALLOCATABLE, "cpu": "1"}) for i in range(10)]
    nodes += [
        make_node(f"low-mem{i}", allocatable={**ALLOCATABLE, "memory": "1Gi"}) for i in range(2)
    ]
    result = default_framework().schedule_pod(
        snapshot_of(nodes), make_pod(requests={"cpu": "2", "memory": "2Gi"})
    )
    assert result.message == (
        "0/12 nodes are available: 10 Insufficient cpu, 2 Insufficient memory."
        " no new claims to deallocate,"
        " preemption: 0/12 nodes are available: 12 No preemption victims found for incoming pod."
    )


def test_first_rejecting_plugin_wins_per_node():
    framework = framework_with(RejectNodes({"a", "b"}), filter=["RejectNodes"])
    nodes = [
        make_node("a", allocatable={**ALLOCATABLE, "cpu": "1"}),
        make_node("b", allocatable=ALLOCATABLE),
        make_node("c", allocatable={**ALLOCATABLE, "cpu": "1"}),
    ]
    result = framework.schedule_pod(snapshot_of(nodes), make_pod(requests={"cpu": "2"}))
    # NodeResourcesFit runs first (default multiPoint order), RejectNodes after it.
    assert result.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint, 2 Insufficient cpu."
    )
    assert result.unschedulable_plugins == {"NodeResourcesFit", "RejectNodes"}


def test_no_nodes_at_all():
    result = default_framework().schedule_pod(snapshot_of([]), make_pod())
    assert result.status == Status(
        Code.UnschedulableAndUnresolvable, ("no nodes available to schedule pods",)
    )
    assert result.fit_error is None


def test_pre_filter_rejection_message():
    rejection = Status(Code.UnschedulableAndUnresolvable, ("pod has unbound PVCs", "and more"))
    framework = framework_with(FixedPreFilter(status=rejection), pre_filter=["FixedPreFilter"])
    result = framework.schedule_pod(
        snapshot_of(
            [make_node("a", allocatable=ALLOCATABLE), make_node("b", allocatable=ALLOCATABLE)]
        ),
        make_pod(),
    )
    assert result.message == "0/2 nodes are available: pod has unbound PVCs, and more."
    assert result.unschedulable_plugins == {"FixedPreFilter"}
    assert result.fit_error is not None and result.fit_error.diagnosis.all_unresolvable


def test_pre_filter_result_narrows_the_nodes():
    narrowing = FixedPreFilter(result=PreFilterResult(frozenset({"b", "c"})))
    framework = framework_with(narrowing, pre_filter=["FixedPreFilter"])
    nodes = [
        make_node("a", allocatable=ALLOCATABLE),
        make_node("b", allocatable={**ALLOCATABLE, "cpu": "1"}),
        make_node("c", allocatable={**ALLOCATABLE, "cpu": "1"}),
    ]
    result = framework.schedule_pod(snapshot_of(nodes), make_pod(requests={"cpu": "2"}))
    assert result.message == (
        "0/3 nodes are available: 1 node(s) didn't satisfy plugin(s) [FixedPreFilter], "
        "2 Insufficient cpu."
    )
    fitting = framework.schedule_pod(snapshot_of(nodes), make_pod(requests={"cpu": "1"}))
    assert fitting.node in {"b", "c"}
    empty = FixedPreFilter(result=PreFilterResult(frozenset()))
    framework = framework_with(empty, pre_filter=["FixedPreFilter"])
    result = framework.schedule_pod(snapshot_of(nodes), make_pod())
    assert result.message == (
        "0/3 nodes are available: node(s) didn't satisfy plugin FixedPreFilter."
    )


def test_least_allocated_picks_the_emptiest_node():
    nodes = [
        make_node("busy", allocatable=ALLOCATABLE),
        make_node("idle", allocatable=ALLOCATABLE),
        make_node("half", allocatable=ALLOCATABLE),
    ]
    bound = [
        make_pod("b1", node_name="busy", requests={"cpu": "3", "memory": "6Gi"}),
        make_pod("h1", node_name="half", requests={"cpu": "2", "memory": "4Gi"}),
    ]
    result = default_framework().schedule_pod(
        snapshot_of(nodes, bound), make_pod(requests={"cpu": "1", "memory": "1Gi"})
    )
    assert (result.node, result.feasible_nodes, result.evaluated_nodes) == ("idle", 3, 3)


def test_single_feasible_node_is_chosen_without_scoring():
    framework = framework_with(FixedScore({"a": 100}), score=[("FixedScore", 1)])
    result = framework.schedule_pod(
        snapshot_of(
            [
                make_node("a", allocatable={**ALLOCATABLE, "cpu": "1"}),
                make_node("b", allocatable=ALLOCATABLE),
            ]
        ),
        make_pod(requests={"cpu": "2"}),
        explain=True,
    )
    assert (result.node, result.feasible_nodes, result.scores) == ("b", 1, {})


def test_weights_and_explain():
    framework = framework_with(FixedScore({"a": 10, "b": 40}), score=[("FixedScore", 3)])
    result = framework.schedule_pod(
        snapshot_of(
            [make_node("a", allocatable=ALLOCATABLE), make_node("b", allocatable=ALLOCATABLE)]
        ),
        make_pod(),
        explain=True,
    )
    assert result.node == "b"
    assert result.scores["FixedScore"].tolist() == [10, 40]
    assert result.scores["NodeResourcesFit"].tolist() == [100, 100]


@pytest.mark.parametrize(
    ("scores", "invalid"),
    [
        ({"a": 101}, 101),
        ({"a": -1}, -1),
        ({"a": 50, "b": 250}, 250),  # the first bad score is named
        ({"a": 101, "b": -7}, 101),
        ({"a": 100, "b": 0}, None),  # the bounds are valid
    ],
)
def test_a_score_out_of_range_is_an_error(scores, invalid):
    framework = framework_with(FixedScore(scores), score=[("FixedScore", 1)])
    result = framework.schedule_pod(
        snapshot_of(
            [make_node("a", allocatable=ALLOCATABLE), make_node("b", allocatable=ALLOCATABLE)]
        ),
        make_pod(),
    )
    if invalid is None:
        assert (result.status.code, result.node) == (Code.Success, "a")
        return
    assert result.status.code == Code.Error
    assert result.message.endswith(
        f'plugin "FixedScore" returns an invalid score {invalid}, it should in the range of '
        "[0, 100] after normalizing"
    )


def test_ties_are_broken_at_random_reproducibly():
    snapshot = snapshot_of([make_node(f"n{i}", allocatable=ALLOCATABLE) for i in range(5)])
    pod = PodInfo.of(make_pod(requests={"cpu": "1"}))

    def picks(seed: int) -> list[str | None]:
        framework = default_framework(seed)
        return [framework.schedule_pod(snapshot, pod).node for _ in range(200)]

    first = picks(7)
    assert first == picks(7)
    assert first != picks(8)
    counts = Counter(first)
    assert set(counts) == {f"n{i}" for i in range(5)}
    assert min(counts.values()) > 20  # uniform over the five tied nodes


class TestNominatedPods:
    """RunFilterPluginsWithNominatedPods: a node must pass with and without the pods
    nominated to it that have at least the pod's priority."""

    def nominated(self, *pods):
        by_node: dict[str, list[PodInfo]] = {}
        for pod in pods:
            info = PodInfo.of(pod)
            by_node.setdefault(info.pod.status.nominated_node_name or "", []).append(info)
        return NominatedPods.of(by_node)

    def test_higher_priority_nominated_pod_keeps_its_room(self):
        snapshot = snapshot_of([make_node("a", allocatable={**ALLOCATABLE, "cpu": "2"})])
        waiting = make_pod("preemptor", priority=10, requests={"cpu": "2"}, nominated_node_name="a")
        pod = make_pod("late", priority=5, requests={"cpu": "2"})
        framework = default_framework()
        result = framework.schedule_pod(snapshot, pod, nominated=self.nominated(waiting))
        assert result.message == (
            "0/1 nodes are available: 1 Insufficient cpu."
            " no new claims to deallocate,"
            " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        )
        assert framework.schedule_pod(snapshot, pod).node == "a"  # without nominator

    @pytest.mark.parametrize(
        "waiting",
        [
            make_pod("lower", priority=1, requests={"cpu": "2"}, nominated_node_name="a"),
            make_pod("late", priority=5, requests={"cpu": "2"}, nominated_node_name="a"),
        ],
        ids=["lower priority is ignored", "the pod itself is ignored"],
    )
    def test_ignored_nominations(self, waiting):
        snapshot = snapshot_of([make_node("a", allocatable={**ALLOCATABLE, "cpu": "2"})])
        pod = make_pod("late", priority=5, requests={"cpu": "2"})
        result = default_framework().schedule_pod(snapshot, pod, nominated=self.nominated(waiting))
        assert result.node == "a"

    @staticmethod
    def company() -> tuple[FixedPreFilter, Framework, Cache]:
        """NeedsCompany behind a PreFilter that records AddPod; nodes "a" (alone) and
        "b" (with a friend)."""
        prefilter = FixedPreFilter()
        framework = framework_with(
            prefilter, NeedsCompany(), pre_filter=["FixedPreFilter"], filter=["NeedsCompany"]
        )
        snapshot = snapshot_of(
            [make_node("a", allocatable=ALLOCATABLE), make_node("b", allocatable=ALLOCATABLE)],
            [make_pod("friend", node_name="b")],
        )
        return prefilter, framework, snapshot

    def test_node_must_also_pass_without_the_nominated_pods(self):
        prefilter, framework, snapshot = self.company()
        waiting = make_pod("w", priority=10, nominated_node_name="a")
        pod = make_pod("p", priority=10)
        result = framework.schedule_pod(snapshot, pod, nominated=self.nominated(waiting))
        # "a" passes with the nominated pod (it has company) but not without it. It
        # fails without, and "b" fits: the pass with the pod (AddPod) is not needed.
        assert result.node == "b"
        assert prefilter.added == []
        alone = snapshot_of([make_node("a", allocatable=ALLOCATABLE)])
        result = framework.schedule_pod(alone, pod, nominated=self.nominated(waiting))
        # Nothing fits: every node's status is shown, so the pass with the pod runs.
        assert prefilter.added == [("default/w", "a")]
        assert (
            result.message == "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."
        )

    def test_an_explained_node_shows_the_reasons_with_the_nominated_pods(self):
        """The pod fits "b"; "a" fails without the nominated pod (cpu) and, with it, for
        memory as well: the explanation shows upstream's status, the one with it."""
        small = {**ALLOCATABLE, "cpu": "1", "memory": "2Gi"}
        snapshot = snapshot_of(
            [make_node("a", allocatable=small), make_node("b", allocatable=ALLOCATABLE)]
        )
        waiting = make_pod("w", priority=10, requests={"memory": "2Gi"}, nominated_node_name="a")
        pod = make_pod("p", priority=5, requests={"cpu": "2", "memory": "1Gi"})
        nominated = self.nominated(waiting)
        result = default_framework().schedule_pod(snapshot, pod, nominated=nominated, explain=True)
        assert result.node == "b" and result.explanation is not None
        shown = result.explanation.to_json()["filter"]["a"]
        assert shown["reasons"] == ["Insufficient cpu", "Insufficient memory"]
        plain = default_framework().schedule_pod(snapshot, pod, explain=True)
        assert plain.explanation is not None
        assert plain.explanation.to_json()["filter"]["a"]["reasons"] == ["Insufficient cpu"]

    @pytest.mark.parametrize(
        ("rows", "nominate", "expected"),
        [
            (["a", "b", "c"], True, [False, True, False]),
            (["b", "c"], True, [False, True, False]),
            (["a"], True, [False, False, False]),
            (["a", "b", "c"], False, [True, True, False]),
            ([], True, [False, False, False]),
        ],
        ids=["all", "some", "only-the-nominated", "no-nominations", "none"],
    )
    def test_fits_many(self, rows, nominate, expected):
        """A 2-cpu pod: "a" has room but a 2-cpu preemptor nominated to it, "b" has room,
        "c" has 1 cpu. Rows not asked about do not pass."""
        two = {**ALLOCATABLE, "cpu": "2"}
        snapshot = snapshot_of(
            [
                make_node("a", allocatable=two),
                make_node("b", allocatable=two),
                make_node("c", allocatable={**ALLOCATABLE, "cpu": "1"}),
            ]
        ).snapshot()
        waiting = make_pod("w", priority=10, requests={"cpu": "2"}, nominated_node_name="a")
        pod = PodInfo.of(make_pod("p", priority=5, requests={"cpu": "2"}))
        framework = default_framework()
        state = CycleState()
        nominated = self.nominated(waiting) if nominate else None
        assert framework.run_pre_filter_plugins(state, pod, snapshot, nominated).is_success()
        asked = [snapshot.index[name] for name in rows]
        assert framework.fits_many(state, pod, snapshot, asked).tolist() == expected

    def test_fits_many_runs_the_nominated_pass_only_where_the_filters_pass(self):
        prefilter, framework, cache = self.company()
        snapshot = cache.snapshot()
        waiting = [
            make_pod("wa", priority=10, nominated_node_name="a"),
            make_pod("wb", priority=10, nominated_node_name="b"),
        ]
        pod = PodInfo.of(make_pod("p", priority=10))
        state = CycleState()
        framework.run_pre_filter_plugins(state, pod, snapshot, self.nominated(*waiting))
        # "a" fails alone (no company) whatever the nominated pods do: not visited.
        assert framework.fits_many(state, pod, snapshot, [0, 1]).tolist() == [False, True]
        assert prefilter.added == [("default/wb", "b")]

    @pytest.mark.parametrize("seed", range(40))
    def test_fits_many_agrees_with_filter_many(self, seed):
        """Random clusters, nominations and pods: for the rows asked about, fits_many
        passes exactly the nodes filter_many passes."""
        rng = random.Random(seed)
        nodes = [
            make_node(
                f"n{i}",
                allocatable={**ALLOCATABLE, "cpu": str(rng.randint(1, 4)), "pods": "3"},
            )
            for i in range(8)
        ]
        bound = [
            make_pod(f"b{i}", node_name=f"n{rng.randrange(8)}",
                     requests={"cpu": f"{rng.choice((100, 500, 900))}m"})
            for i in range(rng.randint(0, 10))
        ]  # fmt: skip
        snapshot = snapshot_of(nodes, bound).snapshot()
        waiting = [
            make_pod(f"w{i}", priority=rng.randint(0, 10),
                     nominated_node_name=f"n{rng.randrange(8)}",
                     requests={"cpu": f"{rng.choice((500, 1000, 2000))}m"})
            for i in range(rng.randint(0, 6))
        ]  # fmt: skip
        pod = PodInfo.of(
            make_pod("p", priority=rng.randint(0, 10), requests={"cpu": f"{rng.randint(1, 30)}00m"})
        )
        asked = sorted(rng.sample(range(8), rng.randint(0, 8)))
        framework = default_framework()
        state = CycleState()
        nominated = self.nominated(*waiting) if waiting else None
        assert framework.run_pre_filter_plugins(state, pod, snapshot, nominated).is_success()
        passed, _ = framework.filter_many(state, pod, snapshot)
        fits = framework.fits_many(state, pod, snapshot, asked)
        assert fits[asked].tolist() == passed[asked].tolist()
        assert not fits[[r for r in range(8) if r not in asked]].any()

    def test_each_node_s_nominated_pods_are_asked_for_once_per_cycle(self):
        """The nominated pods do not change during a cycle: the FitError and the
        preemption's dry run (its first pass and every reprieve step) ask for each
        node's once."""
        two = {**ALLOCATABLE, "cpu": "2"}
        cache = snapshot_of(
            [make_node(n, allocatable=two) for n in ("a", "b", "c")],
            [make_pod(f"low-{n}", node_name=n, priority=1, requests={"cpu": "1"})
             for n in ("a", "b", "c")],
        )  # fmt: skip
        waiting = {
            n: [PodInfo.of(make_pod(f"w{n}", priority=10, requests={"cpu": "1"}))]
            for n in ("a", "b")
        }
        asked: Counter[str] = Counter()

        def pods_for(name: str) -> list[PodInfo]:
            asked[name] += 1
            return waiting.get(name, [])

        pod = make_pod("p", priority=10, requests={"cpu": "2"})
        result = default_framework().schedule_pod(
            cache, pod, nominated=NominatedPods(tuple(waiting), pods_for)
        )
        assert result.post_filter is not None and result.post_filter.nominated_node_name == "c"
        assert asked and max(asked.values()) == 1, asked

    def test_each_node_keeps_its_own_first_pass_reason(self):
        """Rows the nominated pass rejects with the same plugin but different codes
        keep their own statuses (a cpu shortage on one node, memory on the other)."""
        two = {**ALLOCATABLE, "cpu": "2", "memory": "2Gi"}
        snapshot = snapshot_of([make_node(n, allocatable=two) for n in ("a", "b", "c")])
        waiting = [
            make_pod("wa", priority=10, requests={"cpu": "2"}, nominated_node_name="a"),
            make_pod("wb", priority=10, requests={"memory": "2Gi"}, nominated_node_name="b"),
            make_pod("wc", priority=10, requests={"cpu": "2"}, nominated_node_name="c"),
        ]
        pod = make_pod("p", priority=5, requests={"cpu": "1", "memory": "1Gi"})
        result = default_framework().schedule_pod(snapshot, pod, nominated=self.nominated(*waiting))
        assert result.message.startswith(
            "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."
        )

    def test_first_pass_status_is_reported(self):
        framework = framework_with(NeedsCompany(), filter=["NeedsCompany"])
        snapshot = snapshot_of([make_node("a", allocatable={**ALLOCATABLE, "cpu": "2"})])
        waiting = make_pod("w", priority=10, requests={"cpu": "2"}, nominated_node_name="a")
        pod = make_pod("p", requests={"cpu": "1"})
        result = framework.schedule_pod(snapshot, pod, nominated=self.nominated(waiting))
        assert result.message == "0/1 nodes are available: 1 Insufficient cpu."


def test_nominated_node_of_the_pod_is_preferred():
    snapshot = snapshot_of(
        [
            make_node("a", allocatable=ALLOCATABLE),
            make_node("b", allocatable=ALLOCATABLE),
            make_node("c", allocatable=ALLOCATABLE),
        ]
    )
    pod = make_pod(requests={"cpu": "1"}, nominated_node_name="c")
    assert {default_framework(s).schedule_pod(snapshot, pod).node for s in range(10)} == {"c"}
