"""NodeAffinity, from upstream's node_affinity_test.go (TestNodeAffinity,
TestNodeAffinityPriority, Test_isSchedulableAfterNodeChange) and the args validation."""

from __future__ import annotations

import pytest

from services.framework.api.events import QueueingHint
from services.framework.api.interface import CycleState, PreFilterResult
from services.framework.api.registry import ConfigError
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.nodeaffinity.args import NodeAffinityArgs
from services.framework.plugins.nodeaffinity.node_affinity import (
    ENTRY,
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
)
from tests.builders import make_node, make_pod
from tests.builders.selectors import affinity, req, term
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.basic_plugins import filter_statuses, scores

POD_MISMATCH = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_POD,))
ENFORCED = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_ENFORCED,))
NAME = "metadata.name"


def plugin(raw_args: dict | None = None) -> NodeAffinity:
    args = ENTRY.decode_args(raw_args, "")
    assert isinstance(args, NodeAffinityArgs)
    return NodeAffinity(args)


def required(*terms):
    return affinity(required=list(terms))


FILTER_CASES = [
    pytest.param({"node_selector": {"foo": "bar"}}, {}, "node1", False, id="missing labels"),
    pytest.param(
        {"node_selector": {"foo": "bar"}}, {"foo": "bar"}, "node1", True, id="same labels"
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "node1",
        True,
        id="node labels are superset",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "node1",
        False,
        id="node labels are subset",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "In", "bar", "value2")))},
        {"foo": "bar"},
        "node1",
        True,
        id="In matches",
    ),
    pytest.param(
        {"affinity": required(term(req("kernel-version", "Gt", "0204")))},
        {"kernel-version": "0206"},
        "node1",
        True,
        id="Gt matches",
    ),
    pytest.param(
        {"affinity": required(term(req("mem-type", "NotIn", "DDR", "DDR2")))},
        {"mem-type": "DDR3"},
        "node1",
        True,
        id="NotIn matches",
    ),
    pytest.param(
        {"affinity": required(term(req("GPU", "Exists")))},
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        True,
        id="Exists matches",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "In", "value1", "value2")))},
        {"foo": "bar"},
        "node1",
        False,
        id="In doesn't match",
    ),
    pytest.param(
        {"affinity": required(term())},
        {"foo": "bar"},
        "node1",
        False,
        id="empty MatchExpressions match no objects",
    ),
    pytest.param(
        {"affinity": affinity(required=[])}, {"foo": "bar"}, "node1", False, id="no terms"
    ),
    pytest.param({}, {"foo": "bar"}, "node1", True, id="no affinity"),
    pytest.param(
        {"affinity": affinity(required=None)},
        {"foo": "bar"},
        "node1",
        True,
        id="affinity without required selector",
    ),
    pytest.param(
        {"affinity": required(term(req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER")))},
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        True,
        id="expressions ANDed match",
    ),
    pytest.param(
        {"affinity": required(term(req("GPU", "Exists"), req("GPU", "In", "AMD", "INTER")))},
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        False,
        id="expressions ANDed don't match",
    ),
    pytest.param(
        {
            "affinity": required(
                term(req("foo", "In", "bar", "value2")),
                term(req("diffkey", "In", "wrong", "value2")),
            )
        },
        {"foo": "bar"},
        "node1",
        True,
        id="terms ORed",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}, "affinity": required(term(req("foo", "Exists")))},
        {"foo": "bar"},
        "node1",
        True,
        id="affinity and nodeSelector both satisfied",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}, "affinity": required(term(req("foo", "Exists")))},
        {"foo": "barrrrrr"},
        "node1",
        False,
        id="nodeSelector not satisfied",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "NotIn", "invalid value: ___@#$%^")))},
        {"foo": "bar"},
        "node1",
        False,
        id="invalid value in a term",
    ),
    pytest.param(
        {"affinity": required(term(fields=[req(NAME, "In", "node1")]))},
        {},
        "node1",
        True,
        id="matchFields In matches",
    ),
    pytest.param(
        {"affinity": required(term(fields=[req(NAME, "In", "node1")]))},
        {},
        "node2",
        False,
        id="matchFields In doesn't match",
    ),
    pytest.param(
        {
            "affinity": required(
                term(fields=[req(NAME, "In", "node1"), req(NAME, "In", "node2")]),
                term(req("foo", "In", "bar")),
            )
        },
        {"foo": "bar"},
        "node2",
        True,
        id="fields term fails, expressions term matches",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "In", "bar"), fields=[req(NAME, "In", "node1")]))},
        {"foo": "bar"},
        "node2",
        False,
        id="one term: fields fail, expressions match",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "In", "bar"), fields=[req(NAME, "In", "node1")]))},
        {"foo": "bar"},
        "node1",
        True,
        id="one term: both match",
    ),
    pytest.param(
        {"affinity": required(term(fields=[req(NAME, "NotIn", "node1")]))},
        {},
        "node2",
        True,
        id="matchFields NotIn",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "Gt", "10")))},
        {"foo": "abc"},
        "node1",
        False,
        id="Gt against a non-integer label",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "Lt", "x10")))},
        {"foo": "5"},
        "node1",
        False,
        id="Lt with a non-integer value is a parse error",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "Lt", "10")))},
        {"foo": "-5"},
        "node1",
        True,
        id="Lt negative",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "Gt", "1", "2")))},
        {"foo": "5"},
        "node1",
        False,
        id="Gt takes exactly one value",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "DoesNotExist")))},
        {"bar": "x"},
        "node1",
        True,
        id="DoesNotExist",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "Exists", "x")))},
        {"foo": "x"},
        "node1",
        False,
        id="Exists with values is a parse error",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "Equals", "x")))},
        {"foo": "x"},
        "node1",
        False,
        id="unknown operator is a parse error",
    ),
    pytest.param(
        {"affinity": required(term(req("foo", "In", "x")), term(req("foo", "Bad")))},
        {"foo": "x"},
        "node1",
        True,
        id="a broken term does not stop a matching one",
    ),
]


@pytest.mark.parametrize(("pod_fields", "labels", "node_name", "fits"), FILTER_CASES)
def test_filter(pod_fields, labels, node_name, fits):
    node = make_node(node_name, labels=labels)
    statuses = filter_statuses(plugin(), make_pod(**pod_fields), [node])
    assert statuses == [None if fits else POD_MISMATCH]


ADDED = {
    "addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}
            ]
        }
    }
}


@pytest.mark.parametrize(
    ("pod_fields", "labels", "expected"),
    [
        pytest.param({}, {"zone": "foo"}, None, id="matches added affinity"),
        pytest.param({}, {"zone": "bar"}, ENFORCED, id="added affinity doesn't match"),
        pytest.param(
            {"node_selector": {"foo": "bar"}},
            {"zone": "foo"},
            POD_MISMATCH,
            id="added matches, pod's selector doesn't",
        ),
        pytest.param(
            {"node_selector": {"zone": "foo"}},
            {"zone": "bar"},
            ENFORCED,
            id="both fail: enforced is reported",
        ),
    ],
)
def test_filter_with_added_affinity(pod_fields, labels, expected):
    node = make_node("node1", labels=labels)
    assert filter_statuses(plugin(ADDED), make_pod(**pod_fields), [node]) == [expected]


def pre_filter(pod_fields):
    state, pod = CycleState(), PodInfo.of(make_pod(**pod_fields))
    return plugin().pre_filter(state, pod, snapshot_of([make_node("node1")]).snapshot())


@pytest.mark.parametrize(
    ("pod_fields", "expected_result", "expected_status"),
    [
        pytest.param({}, None, Status(Code.Skip), id="nothing to do"),
        pytest.param({"node_selector": {"a": "b"}}, None, Status(), id="selector only"),
        pytest.param(
            {"affinity": required(term(fields=[req(NAME, "In", "node1")]))},
            PreFilterResult(frozenset({"node1"})),
            Status(),
            id="pinned by name",
        ),
        pytest.param(
            {
                "affinity": required(
                    term(fields=[req(NAME, "In", "node1")]),
                    term(fields=[req(NAME, "In", "node2")]),
                )
            },
            PreFilterResult(frozenset({"node1", "node2"})),
            Status(),
            id="union over terms",
        ),
        pytest.param(
            {
                "affinity": required(
                    term(fields=[req(NAME, "In", "node1")]), term(req("a", "Exists"))
                )
            },
            None,
            Status(),
            id="a term without names allows every node",
        ),
        pytest.param(
            {
                "affinity": required(
                    term(fields=[req(NAME, "In", "node1"), req(NAME, "In", "node2")])
                )
            },
            None,
            Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_CONFLICT,)),
            id="conflicting names",
        ),
    ],
)
def test_pre_filter(pod_fields, expected_result, expected_status):
    result, status = pre_filter(pod_fields)
    assert result == expected_result
    assert status == expected_status


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = affinity(preferred=[(2, term(req("foo", "In", "bar")))])
AFFINITY2 = affinity(
    preferred=[
        (2, term(req("foo", "In", "bar"))),
        (4, term(req("key", "In", "value"))),
        (5, term(req("foo", "In", "bar"), req("key", "In", "value"), req("az", "In", "az1"))),
    ]
)
AFFINITY1_ARGS = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {
            "weight": 2,
            "preference": {
                "matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]
            },
        }
    ]
}
ADDED_PREFERRED = {
    "addedAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 3,
                "preference": {
                    "matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]
                },
            }
        ]
    }
}


@pytest.mark.parametrize(
    ("pod_affinity", "labels", "args", "expected"),
    [
        pytest.param(None, [LABEL1, LABEL2, LABEL3], None, Status(Code.Skip), id="no affinity"),
        pytest.param(AFFINITY1, [LABEL4, LABEL2, LABEL3], None, [0, 0, 0], id="no node matches"),
        pytest.param(AFFINITY1, [LABEL1, LABEL2, LABEL3], None, [100, 0, 0], id="only node1"),
        pytest.param(
            AFFINITY2, [LABEL1, LABEL5, LABEL2], None, [18, 100, 36], id="different priorities"
        ),
        pytest.param(
            None, [LABEL1, LABEL2], {"addedAffinity": AFFINITY1_ARGS}, [100, 0], id="added"
        ),
        pytest.param(
            AFFINITY1,
            [LABEL1, LABEL2, LABEL5],
            ADDED_PREFERRED,
            [40, 60, 100],
            id="added affinity and pod affinity",
        ),
    ],
)
def test_score(pod_affinity, labels, args, expected):
    nodes = [make_node(f"node{i}", labels=lab) for i, lab in enumerate(labels)]
    got = scores(plugin(args), make_pod(affinity=pod_affinity), nodes)
    assert got == expected


def test_score_without_pre_score():
    nodes = [make_node("node1", labels=LABEL1), make_node("node5", labels=LABEL5)]
    pod = make_pod(affinity=AFFINITY2)
    assert scores(plugin(), pod, nodes, pre_score=False) == [18, 100]


def test_pre_score_reports_bad_preferred_terms():
    pod = make_pod(affinity=affinity(preferred=[(1, term(req("foo", "Gt", "x")))]))
    status = scores(plugin(), pod, [make_node("n")])
    assert isinstance(status, Status)
    assert status.code == Code.Error
    assert status.message().startswith("[0].matchExpressions[0].values[0]: Invalid value")


def test_zero_weight_and_empty_preferred_terms_are_ignored():
    pod = make_pod(affinity=affinity(preferred=[(0, term(req("foo", "Exists"))), (5, term())]))
    assert scores(plugin(), pod, [make_node("n", labels={"foo": "x"})]) == [0]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": NAME, "operator": "In", "values": ["a", "b"]}]}
                        ]
                    }
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchFields[0].values",
        ),
        (
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "preference": {"matchExpressions": [{"key": "a", "operator": "Bad"}]},
                        }
                    ]
                }
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
            "[0].matchExpressions[0].operator",
        ),
        ({"addedAffinity": {"unknown": 1}}, "addedAffinity.unknown"),
    ],
    ids=["bad field selector", "bad operator", "unknown field"],
)
def test_args_validation(raw, field):
    with pytest.raises(ConfigError) as err:
        ENTRY.decode_args(raw, "")
    assert err.value.field == field


def test_queueing_hint_after_node_change():
    pod = make_pod(affinity=required(term(req("foo", "In", "bar"))))
    matching, other = make_node("n", labels={"foo": "bar"}), make_node("n", labels={"k": "v"})
    hint = plugin().after_node_change
    assert hint(pod, None, make_node("n")) == QueueingHint.QueueSkip
    assert hint(pod, None, matching) == QueueingHint.Queue
    assert hint(pod, make_node("n"), other) == QueueingHint.QueueSkip
    assert hint(pod, matching, make_node("n", labels={"foo": "bar", "k": "v"})) == (
        QueueingHint.QueueSkip
    )
    assert hint(pod, matching, other) == QueueingHint.QueueSkip
    assert hint(pod, make_node("n"), matching) == QueueingHint.Queue
    enforced = plugin(ADDED).after_node_change
    assert enforced(pod, None, matching) == QueueingHint.QueueSkip
    assert enforced(pod, None, make_node("n", labels={"foo": "bar", "zone": "foo"})) == (
        QueueingHint.Queue
    )
