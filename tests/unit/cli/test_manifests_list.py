"""``kind: List`` in the files the what-if commands read (what ``ksched snapshot``
writes): items expanded in order, a List inside a List and an item without a kind are
bad input naming the item."""

from __future__ import annotations

import json

import pytest

from services.cli.manifests import ManifestError, read_documents

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "demo"}}
PC = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hi"}}


def listed(*items: object, kind: str = "List") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": ""}, "items": items}


def named(obj: dict[str, object], name: str) -> dict[str, object]:
    return {**obj, "metadata": {**obj["metadata"], "name": name}}


@pytest.mark.parametrize(
    ("documents", "expected"),
    [
        pytest.param([listed(NODE, PC, POD)], ["node/n1", "priorityclass/hi", "pod/web"], id="one"),
        pytest.param(
            [listed(POD, NODE), named(NODE, "n2"), listed(named(POD, "db"))],
            ["pod/web", "node/n1", "node/n2", "pod/db"],
            id="Lists among documents, in file order",
        ),
        pytest.param([listed()], [], id="an empty List"),
        pytest.param([{**listed(), "items": None}], [], id="items: null"),
    ],
)
def test_the_items_of_a_list_are_read_in_order(documents, expected):
    text = "\n---\n".join(json.dumps(d) for d in documents)
    read = read_documents(text, source="f.yaml")
    assert [f"{d.kind}/{d.raw['metadata']['name']}" for d in read] == expected
    assert [d.index for d in read] == list(range(1, len(expected) + 1))


@pytest.mark.parametrize(
    ("documents", "error"),
    [
        pytest.param(
            [NODE, listed(POD, listed(NODE))],
            "f.yaml: item 2 of the List in document 2: a List inside a List: Lists do not nest",
            id="a List in a List",
        ),
        pytest.param(
            [listed(POD, listed(NODE, kind="NodeList"))],
            "f.yaml: item 2 of the List in document 1: a NodeList inside a List: Lists do not nest",
            id="a NodeList in a List",
        ),
        pytest.param(
            [listed(NODE, {"metadata": {"name": "x"}})],
            "f.yaml: item 2 of the List in document 1: field kind: is required",
            id="an item without kind",
        ),
        pytest.param(
            [listed(NODE, "text")],
            "f.yaml: item 2 of the List in document 1: not an object",
            id="an item that is not an object",
        ),
        pytest.param(
            [{**listed(), "items": {"a": 1}}],
            "f.yaml: document 1 (List): field items: not a list",
            id="items not a list",
        ),
    ],
)
def test_bad_lists_are_one_error_naming_the_item(documents, error):
    text = "\n---\n".join(json.dumps(d) for d in documents)
    with pytest.raises(ManifestError) as raised:
        read_documents(text, source="f.yaml")
    assert str(raised.value) == error
