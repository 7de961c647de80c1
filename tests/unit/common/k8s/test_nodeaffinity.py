"""Node affinity, one node at a time: upstream's ``TestNodeSelectorMatch``,
``TestPodMatchesNodeSelectorAndAffinityTerms`` and ``TestPreferredSchedulingTermsScore``
(component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go)."""

from __future__ import annotations

import pytest

from contracts.k8s import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
)
from services.common.k8s.nodeaffinity import (
    compile_preferred,
    compile_terms,
    get_required_node_affinity,
    preferred_score,
    terms_match,
)
from tests.builders import make_node, make_pod
from tests.builders.selectors import affinity, req, term


def aff(*exprs: NodeSelectorRequirement) -> Pod:
    """A pod whose required node affinity is one term of ``exprs``."""
    return make_pod(affinity=affinity([term(*exprs)]))


@pytest.mark.parametrize(
    ("pod", "labels", "want"),
    [
        pytest.param(make_pod(), {}, True, id="no selector"),
        pytest.param(make_pod(node_selector={"foo": "bar"}), {}, False, id="missing labels"),
        pytest.param(
            make_pod(node_selector={"foo": "bar"}), {"foo": "bar"}, True, id="same labels"
        ),
        pytest.param(
            make_pod(node_selector={"foo": "bar"}),
            {"foo": "bar", "baz": "blah"},
            True,
            id="node labels are superset",
        ),
        pytest.param(
            make_pod(node_selector={"foo": "bar", "baz": "blah"}),
            {"foo": "bar"},
            False,
            id="node labels are subset",
        ),
        pytest.param(aff(req("foo", "In", "bar", "value2")), {"foo": "bar"}, True, id="In"),
        pytest.param(aff(req("kernel-version", "Gt", "0204")), {"kernel-version": "0206"}, True),
        pytest.param(aff(req("mem-type", "NotIn", "DDR", "DDR2")), {"mem-type": "DDR3"}, True),
        pytest.param(aff(req("GPU", "Exists")), {"GPU": "NVIDIA-GRID-K1"}, True, id="Exists"),
        pytest.param(aff(req("foo", "In", "value1", "value2")), {"foo": "bar"}, False),
        pytest.param(make_pod(affinity=affinity([])), {"foo": "bar"}, False, id="no terms"),
        pytest.param(make_pod(affinity=affinity([term()])), {"foo": "bar"}, False, id="empty term"),
    ],
)
def test_pod_matches_node_selector_and_affinity_terms(pod, labels, want):
    node = make_node("node", labels=labels)
    assert get_required_node_affinity(pod).matches(node) is want


def preferred(weight: int, **parts: list[NodeSelectorRequirement]) -> PreferredSchedulingTerm:
    return PreferredSchedulingTerm(weight=weight, preference=NodeSelectorTerm(**parts))


HOST_1 = req("metadata.name", "In", "host_1")


@pytest.mark.parametrize(
    ("terms", "errors", "score"),
    [
        pytest.param(
            [
                preferred(1, match_fields=[req("metadata.name", "In", "host_1", "host_2")]),
                preferred(1, match_expressions=[req("label_1", "In", "label_1_val")]),
            ],
            [
                '[0].matchFields[0].values: Invalid value: []string{"host_1", "host_2"}: '
                "must have one element"
            ],
            0,
            id="invalid field selector",
        ),
        pytest.param(
            [preferred(0, match_fields=[req("metadata.name", "In", "host_1", "host_2")])],
            [],
            0,
            id="invalid field selector but no weight, error not reported",
        ),
        pytest.param(
            [
                preferred(5, match_fields=[HOST_1]),
                preferred(7, match_expressions=[req("unknown_label", "In", "unknown_val")]),
                preferred(11, match_expressions=[req("label_1", "In", "label_1_val")]),
            ],
            [],
            16,
            id="first and third term match",
        ),
    ],
)
def test_preferred_scheduling_terms_score(terms, errors, score):
    compiled, found = compile_preferred(terms)
    assert [str(e) for e in found] == errors
    if not errors:
        node = make_node("host_1", labels={"label_1": "label_1_val"})
        assert preferred_score(compiled, node) == score


NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_1 = req("label_1", "In", "label_1_val")


@pytest.mark.parametrize(
    ("terms", "node", "errors", "match"),
    [
        pytest.param(
            [
                term(fields=[req("metadata.name", "In", "host_1", "host_2")]),
                term(LABEL_1, fields=[HOST_1]),
                term(req("invalid key", "In", "label_value")),
            ],
            make_node("host_1"),
            [
                "nodeSelectorTerms[0].matchFields[0].values: "
                'Invalid value: []string{"host_1", "host_2"}: must have one element',
                f'nodeSelectorTerms[2].matchExpressions[0].key: Invalid value: "invalid key": '
                f"{NAME_PART}",
            ],
            False,
            id="invalid field selector and label selector",
        ),
        pytest.param(
            [term(LABEL_1, fields=[HOST_1])],
            make_node("host_1"),
            [],
            False,
            id="node matches field selector, but not labels",
        ),
        pytest.param(
            [term(LABEL_1, fields=[HOST_1])],
            make_node("host_1", labels={"label_1": "label_1_val"}),
            [],
            True,
            id="node matches field selector and label selector",
        ),
        pytest.param(
            [term(LABEL_1), term(fields=[HOST_1])],
            make_node("host_1"),
            [],
            True,
            id="second term matches",
        ),
    ],
)
def test_node_selector_match(terms, node, errors, match):
    """Upstream's ``TestNodeSelectorMatch``: NewNodeSelector's errors (here kept per term,
    as the lazy selector the scheduler uses keeps them) and ``Match``."""
    compiled = compile_terms(terms, "")
    assert [str(e) for t in compiled for e in t.errors] == errors
    assert terms_match(compiled, node) is match


def test_a_label_value_error_names_the_key():
    """``validateLabelValue``'s path is ``values[i][key]``."""
    (compiled,) = compile_terms([term(req("zone", "In", "x" * 64))], "")
    assert [str(e) for e in compiled.errors] == [
        f'nodeSelectorTerms[0].matchExpressions[0].values[0][zone]: Invalid value: "{"x" * 64}": '
        "must be no more than 63 characters"
    ]
