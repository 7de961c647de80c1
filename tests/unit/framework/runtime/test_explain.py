"""Framework.schedule_pod(explain=True): filter verdicts per node, scores per plugin."""

from __future__ import annotations

from services.framework.api.interface import PreFilterResult
from services.framework.api.status import Code, Status
from tests.builders import make_node, make_pod
from tests.unit.framework.fakes import (
    TAINTED,
    FixedPreFilter,
    FixedScore,
    RejectNodes,
    framework_with,
)
from tests.unit.framework.helpers import snapshot_of

INSUFFICIENT_CPU = {
    "plugin": "NodeResourcesFit",
    "status": "Unschedulable",
    "reasons": ["Insufficient cpu"],
}


ALLOCATABLE = {"cpu": "4", "memory": "8Gi", "pods": 110}


def test_filter_verdicts_and_weighted_scores() -> None:
    framework = framework_with(
        RejectNodes({"b"}),
        FixedScore({"c": 10, "d": 40}),
        filter=["RejectNodes"],
        score=[("FixedScore", 3)],
    )
    nodes = [
        make_node("a", allocatable={**ALLOCATABLE, "cpu": "1"}),
        make_node("b", allocatable=ALLOCATABLE),
        make_node("c", allocatable=ALLOCATABLE),
        make_node("d", allocatable=ALLOCATABLE),
    ]
    result = framework.schedule_pod(
        snapshot_of(nodes), make_pod(requests={"cpu": "2", "memory": "1Gi"}), explain=True
    )
    assert result.explanation is not None
    explained = result.explanation.to_json()
    assert explained["evaluatedNodes"] == 4
    assert explained["feasibleNodes"] == 2
    assert explained["filterPlugins"] == ["NodeResourcesFit", "RejectNodes"]
    assert explained["filter"] == {
        "a": INSUFFICIENT_CPU,
        "b": {
            "plugin": "RejectNodes",
            "status": "UnschedulableAndUnresolvable",
            "reasons": list(TAINTED.reasons),
        },
        "c": "passed",
        "d": "passed",
    }
    # LeastAllocated: (cpu (4-2)/4 = 50 + memory (8-1)/8 = 87) / 2 = 68 on c and d.
    assert explained["score"] == {
        "c": {
            "plugins": {
                "NodeResourcesFit": {"score": 68, "weighted": 68},
                "FixedScore": {"score": 10, "weighted": 30},
            },
            "total": 98,
        },
        "d": {
            "plugins": {
                "NodeResourcesFit": {"score": 68, "weighted": 68},
                "FixedScore": {"score": 40, "weighted": 120},
            },
            "total": 188,
        },
    }
    assert result.node == "d"


def test_totals_are_the_sum_of_the_weighted_scores() -> None:
    framework = framework_with(
        FixedScore({f"n{i}": 7 * i for i in range(8)}), score=[("FixedScore", 2)]
    )
    nodes = [make_node(f"n{i}", allocatable={**ALLOCATABLE, "cpu": str(2 + i)}) for i in range(8)]
    result = framework.schedule_pod(
        snapshot_of(nodes), make_pod(requests={"cpu": "1"}), explain=True
    )
    assert result.explanation is not None
    for name, entry in result.explanation.to_json()["score"].items():
        weighted = [p["weighted"] for p in entry["plugins"].values()]
        assert entry["total"] == sum(weighted), name
        assert (
            entry["plugins"]["FixedScore"]["weighted"]
            == 2 * entry["plugins"]["FixedScore"]["score"]
        )
    assert result.explanation.score[result.node or ""].total == max(
        s.total for s in result.explanation.score.values()
    )


def test_pre_filter_rejection_is_every_node_s_status() -> None:
    rejection = Status(Code.UnschedulableAndUnresolvable, ("pod has unbound PVCs",))
    framework = framework_with(FixedPreFilter(status=rejection), pre_filter=["FixedPreFilter"])
    result = framework.schedule_pod(
        snapshot_of(
            [make_node("a", allocatable=ALLOCATABLE), make_node("b", allocatable=ALLOCATABLE)]
        ),
        make_pod(),
        explain=True,
    )
    assert result.explanation is not None
    explained = result.explanation.to_json()
    verdict = {
        "plugin": "FixedPreFilter",
        "status": "UnschedulableAndUnresolvable",
        "reasons": ["pod has unbound PVCs"],
    }
    assert explained["filter"] == {"a": verdict, "b": verdict}
    assert (explained["evaluatedNodes"], explained["filterPlugins"], explained["score"]) == (
        0,
        [],
        {},
    )


def test_nodes_outside_the_pre_filter_result_name_the_narrowing_plugin() -> None:
    narrowing = FixedPreFilter(result=PreFilterResult(frozenset({"b"})))
    framework = framework_with(narrowing, pre_filter=["FixedPreFilter"])
    result = framework.schedule_pod(
        snapshot_of(
            [make_node("a", allocatable=ALLOCATABLE), make_node("b", allocatable=ALLOCATABLE)]
        ),
        make_pod(requests={"cpu": "1"}),
        explain=True,
    )
    assert result.explanation is not None
    explained = result.explanation.to_json()
    assert explained["filter"] == {
        "a": {
            "plugin": "FixedPreFilter",
            "status": "UnschedulableAndUnresolvable",
            "reasons": ["node(s) didn't satisfy plugin(s) [FixedPreFilter]"],
        },
        "b": "passed",
    }
    # One feasible node: upstream does not score it.
    assert (explained["evaluatedNodes"], explained["feasibleNodes"], explained["score"]) == (
        1,
        1,
        {},
    )


def test_no_explanation_unless_asked() -> None:
    framework = framework_with()
    result = framework.schedule_pod(
        snapshot_of(
            [make_node("a", allocatable=ALLOCATABLE), make_node("b", allocatable=ALLOCATABLE)]
        ),
        make_pod(),
    )
    assert result.explanation is None
