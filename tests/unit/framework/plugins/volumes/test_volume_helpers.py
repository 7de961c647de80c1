"""The volume plugins' helpers: node selectors over every node, topology terms, label
selectors, claims' classes and binding."""

from __future__ import annotations

import pytest

from contracts.k8s import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from contracts.k8s.storage import TopologySelectorLabelRequirement, TopologySelectorTerm
from services.common.k8s.labels import matches_label_selector
from services.framework.cache.attributes import NodeAttributes
from services.framework.plugins.volumebinding.prebind import bind_volume_to_claim
from services.framework.plugins.volumehelpers.claims import claim_class, is_fully_bound
from services.framework.plugins.volumehelpers.nodeselector import node_selector_mask, topology_mask
from tests.builders import make_node
from tests.builders.volumes import make_pv, make_pvc

NODES = [
    make_node("a", labels={"zone": "z1", "cores": "8"}),
    make_node("b", labels={"zone": "z2", "cores": "16"}),
    make_node("c", labels={"cores": "many"}),
]
ATTRS = NodeAttributes(NODES)
NAMES = [n.metadata.name for n in NODES]


def term(*exprs: tuple[str, str, list[str]], fields=()):
    return NodeSelectorTerm(
        match_expressions=[
            NodeSelectorRequirement(key=k, operator=o, values=v) for k, o, v in exprs
        ],
        match_fields=[NodeSelectorRequirement(key=k, operator=o, values=v) for k, o, v in fields],
    )


@pytest.mark.parametrize(
    ("terms", "want"),
    [
        ([term(("zone", "In", ["z1"]))], [True, False, False]),
        ([term(("zone", "NotIn", ["z1"]))], [False, True, True]),
        ([term(("zone", "Exists", []))], [True, True, False]),
        ([term(("zone", "DoesNotExist", []))], [False, False, True]),
        ([term(("cores", "Gt", ["10"]))], [False, True, False]),
        ([term(("cores", "Lt", ["10"]))], [True, False, False]),
        ([term(("zone", "In", ["z1"])), term(("zone", "In", ["z2"]))], [True, True, False]),
        ([term(("zone", "In", ["z1", "z2"]), ("cores", "Gt", ["10"]))], [False, True, False]),
        ([term()], [False, False, False]),
        ([term(("zone", "In", []))], [False, False, False]),
        ([term(("zone", "Exists", ["z1"]))], [False, False, False]),
        ([term(("cores", "Gt", ["ten"]))], [False, False, False]),
        ([term(("zone", "Bogus", ["z1"])), term(("zone", "In", ["z2"]))], [False, True, False]),
        ([term(fields=[("metadata.name", "In", ["b"])])], [False, True, False]),
        ([term(fields=[("metadata.name", "NotIn", ["b"])])], [True, False, True]),
        ([term(fields=[("metadata.name", "In", ["a", "b"])])], [False, False, False]),
    ],
)
def test_node_selector_mask(terms, want):
    selector = NodeSelector(node_selector_terms=terms)
    assert node_selector_mask(selector, ATTRS, NAMES).tolist() == want


def test_volume_affinity_matches_fields_against_no_name():
    selector = NodeSelector(node_selector_terms=[term(fields=[("metadata.name", "In", ["a"])])])
    assert node_selector_mask(selector, ATTRS).tolist() == [False, False, False]


def test_topology_terms():
    def topo(**labels: list[str]):
        exprs = [TopologySelectorLabelRequirement(key=k, values=v) for k, v in labels.items()]
        return TopologySelectorTerm(match_label_expressions=exprs)

    assert topology_mask([], ATTRS).tolist() == [True, True, True]
    assert topology_mask([topo(zone=["z2"])], ATTRS).tolist() == [False, True, False]
    assert topology_mask([topo(), topo(zone=["z1"])], ATTRS).tolist() == [True, False, False]
    assert topology_mask([topo(zone=["z1"], cores=["16"])], ATTRS).tolist() == [False] * 3


def expr(key: str, operator: str, *values: str) -> LabelSelector:
    requirement = LabelSelectorRequirement(key=key, operator=operator, values=list(values))
    return LabelSelector(match_expressions=[requirement])


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        (LabelSelector(), True),
        (LabelSelector(match_labels={"tier": "ssd"}), True),
        (LabelSelector(match_labels={"tier": "hdd"}), False),
        (expr("tier", "In", "ssd"), True),
        (expr("x", "NotIn", "y"), True),
        (expr("x", "Exists"), False),
        (expr("x", "DoesNotExist"), True),
        (expr("tier", "In"), False),
    ],
)
def test_label_selector(selector, want):
    assert matches_label_selector(selector, {"tier": "ssd"}) is want


def test_claim_class_prefers_the_beta_annotation():
    annotated = make_pvc(
        "c",
        storage_class="spec",
        annotations={"volume.beta.kubernetes.io/storage-class": "beta"},
    )
    assert claim_class(annotated) == "beta"
    assert claim_class(make_pvc("c", storage_class="spec")) == "spec"
    assert claim_class(make_pvc("c")) == ""


def test_fully_bound():
    assert is_fully_bound(make_pvc("c", volume_name="v", bound=True))
    assert is_fully_bound(make_pvc("c", volume_name="v", phase="Bound"))
    assert not is_fully_bound(make_pvc("c", volume_name="v"))
    assert not is_fully_bound(make_pvc("c", bound=True))


def test_bind_volume_to_claim():
    claim = make_pvc("data")
    bound, dirty = bind_volume_to_claim(make_pv("v"), claim)
    assert dirty
    assert bound.metadata.annotations == {"pv.kubernetes.io/bound-by-controller": "yes"}
    again, dirty = bind_volume_to_claim(bound, claim)
    assert (again, dirty) == (bound, False)
    prebound, dirty = bind_volume_to_claim(make_pv("v", claim=("default", "data")), claim)
    assert dirty  # the reference gains the claim's uid
    assert prebound.metadata.annotations == {}
    assert prebound.spec.claim_ref is not None
    assert prebound.spec.claim_ref.uid == claim.metadata.uid
