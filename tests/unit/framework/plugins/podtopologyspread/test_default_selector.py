"""``helper.DefaultSelector`` and ``GetPodServices`` (upstream's helper/spread_test.go,
plus the controller kinds DefaultSelector consults)."""

from __future__ import annotations

import pytest

from contracts.k8s import LabelSelector, LabelSelectorRequirement
from services.common.k8s.labels import EQUALS, Requirement, Selector
from services.framework.plugins.podtopologyspread.selector import default_selector, pod_services
from tests.builders import make_pod
from tests.builders.workloads import (
    make_replica_set,
    make_replication_controller,
    make_service,
    make_stateful_set,
)
from tests.unit.framework.plugins.podtopologyspread.helpers import (
    exists,
    labels,
    listers_of,
    owned_by,
)

SERVICES = [make_service(f"service-{i}", {"app": f"test-{i}"}, "test") for i in range(3)]


@pytest.mark.parametrize(
    ("index", "want"),
    [(0, ["service-0"]), (1, ["service-1"]), (2, ["service-2"]), (3, []), (4, [])],
    ids=lambda value: f"{value}",
)
def test_get_pod_services(index, want):
    incoming = make_pod(
        f"test-pod-{index}", "test", labels={"app": f"test-{index}", "label": f"l-{index}"}
    )
    got = pod_services(incoming, listers_of(SERVICES))
    assert [s.metadata.name for s in got] == want


def eq(**pairs: str) -> Selector:
    return Selector(tuple(sorted(Requirement(k, EQUALS, (v,)) for k, v in pairs.items())))


BAD = LabelSelector(match_expressions=[LabelSelectorRequirement(key="a", operator="Bogus")])


@pytest.mark.parametrize(
    ("incoming", "objects", "want"),
    [
        pytest.param(
            make_pod("p", labels={"app": "web"}), [], Selector(), id="nothing selects the pod"
        ),
        pytest.param(
            make_pod("p", labels={"app": "web", "tier": "fe"}),
            [make_service("a", {"app": "web"}), make_service("b", {"tier": "fe"})],
            eq(app="web", tier="fe"),
            id="the selectors of every service selecting the pod, merged",
        ),
        pytest.param(
            make_pod("p", labels={"app": "web"}),
            [make_service("a", {"app": "web"}, "other"), make_service("b", None)],
            Selector(),
            id="services of another namespace or without a selector",
        ),
        pytest.param(
            owned_by(
                make_pod("p", labels={"app": "web", "v": "1"}),
                "ReplicationController",
                "rc",
                api_version="v1",
            ),
            [make_service("a", {"app": "web"}), make_replication_controller("rc", {"v": "1"})],
            eq(app="web", v="1"),
            id="service and replication controller",
        ),
        pytest.param(
            owned_by(make_pod("p", labels={"app": "web", "v": "1"}), "ReplicaSet", "rs"),
            [make_service("a", {"app": "web"}), make_replica_set("rs", exists("v"))],
            Selector(
                (Requirement("app", EQUALS, ("web",)), Requirement("v", "Exists")),
            ),
            id="service and replica set",
        ),
        pytest.param(
            owned_by(make_pod("p", labels={"app": "web"}), "StatefulSet", "ss"),
            [make_stateful_set("ss", labels(app="web"))],
            eq(app="web"),
            id="stateful set",
        ),
        pytest.param(
            owned_by(
                make_pod("p", labels={"app": "web"}),
                "ReplicaSet",
                "rs",
                api_version="extensions/v1beta1",
            ),
            [make_replica_set("rs", labels(app="web"))],
            Selector(),
            id="an old api version is not a supported controller",
        ),
        pytest.param(
            owned_by(make_pod("p", labels={"app": "web"}), "ReplicaSet", "rs"),
            [make_service("a", {"app": "web"}), make_replica_set("rs", BAD)],
            eq(app="web"),
            id="an invalid controller selector is ignored",
        ),
        pytest.param(
            owned_by(make_pod("p", labels={"app": "web"}), "ReplicaSet", "gone"),
            [make_replica_set("rs", labels(app="web"))],
            Selector(),
            id="the owning replica set is not known",
        ),
    ],
)
def test_default_selector(incoming, objects, want):
    assert default_selector(incoming, listers_of(objects)) == want
