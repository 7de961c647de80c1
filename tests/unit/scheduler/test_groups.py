"""GroupPods (Coscheduling's pod lister in the scheduler): a member counts as assigned
when it is bound, assumed here and through Permit, or waiting at Permit on any replica."""

from __future__ import annotations

import msgspec
import pytest

from contracts.k8s import POD_GROUP_LABEL, Pod
from services.scheduler.groups import GroupPods
from tests.builders import make_pod


def member(name: str, node: str | None = None) -> Pod:
    pod = make_pod(name, node_name=node)
    meta = msgspec.structs.replace(pod.metadata, labels={POD_GROUP_LABEL: "g"})
    return msgspec.structs.replace(pod, metadata=meta)


@pytest.mark.parametrize(
    ("assumed", "permitting", "waiting", "expected"),
    [
        ({}, set(), {}, ["n0"]),  # only the bound one
        ({"default-a-uid": "n1"}, set(), {}, ["n0", "n1"]),
        ({"default-a-uid": "n1"}, {"default-a-uid"}, {}, ["n0"]),  # not through Permit
        ({}, set(), {"default-b-uid": "n2"}, ["n0", "n2"]),  # waiting on another replica
    ],
)
def test_members_on_a_node(
    assumed: dict[str, str], permitting: set[str], waiting: dict[str, str], expected: list[str]
) -> None:
    groups = GroupPods(assumed.get, lambda: permitting, waiting.get)
    groups.load([member("bound", "n0"), member("a"), member("b")])
    nodes = sorted(
        p.spec.node_name for p in groups.pods_in_group("default", "g") if p.spec.node_name
    )
    assert nodes == expected
