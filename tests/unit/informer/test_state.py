"""Reconcile rules: duplicates, stale versions, relists and the sticky nodeName."""

from __future__ import annotations

import msgspec

from contracts.k8s import Pod
from services.informer.state import ClusterObjects
from tests.builders import container, make_pod


def web(
    *, node: str | None = None, version: str | None = None, uid: str = "u1", image: str = "a"
) -> Pod:
    """The one pod these tests reconcile, as ``version`` changes it."""
    return make_pod(
        "web",
        "shop",
        uid=uid,
        resource_version=version,
        node_name=node,
        requests=[container(name="c", image=image)],
    )


def test_identical_event_twice_is_one_change() -> None:
    objects = ClusterObjects()
    first = objects.reconcile("pod", "shop/web", "ADDED", web())
    again = objects.reconcile("pod", "shop/web", "ADDED", web())
    assert first is not None and first.type == "ADDED"
    assert again is None


def test_added_of_known_object_is_modified_and_modified_of_unknown_is_added() -> None:
    objects = ClusterObjects()
    created = objects.reconcile("pod", "shop/web", "MODIFIED", web())
    changed = objects.reconcile("pod", "shop/web", "ADDED", web(image="b"))
    assert created is not None and created.type == "ADDED"
    assert changed is not None and changed.type == "MODIFIED"


def test_older_resource_version_is_ignored() -> None:
    objects = ClusterObjects()
    objects.reconcile("pod", "shop/web", "ADDED", web(version="10", image="new"))
    assert objects.reconcile("pod", "shop/web", "MODIFIED", web(version="9", image="old")) is None


def test_delete_of_unknown_object_is_nothing_and_delete_returns_the_stored_object() -> None:
    objects = ClusterObjects()
    assert objects.reconcile("pod", "shop/web", "DELETED", web()) is None
    objects.reconcile("pod", "shop/web", "ADDED", web(node="n1"))
    change = objects.reconcile("pod", "shop/web", "DELETED", web())
    assert change is not None and isinstance(change.object, Pod)
    assert change.object.spec.node_name == "n1"


def test_late_pending_copy_of_a_bound_pod_keeps_its_node() -> None:
    objects = ClusterObjects()
    objects.reconcile("pod", "shop/web", "ADDED", web())
    objects.reconcile("pod", "shop/web", "MODIFIED", web(node="n1"))
    assert objects.reconcile("pod", "shop/web", "ADDED", web()) is None  # a redelivery
    stored = objects.get("pod", "shop/web")
    assert isinstance(stored, Pod) and stored.spec.node_name == "n1"


def test_a_new_pod_with_the_same_name_does_not_inherit_the_node() -> None:
    objects = ClusterObjects()
    objects.reconcile("pod", "shop/web", "ADDED", web(node="n1"))
    change = objects.reconcile("pod", "shop/web", "MODIFIED", web(uid="u2"))
    assert change is not None
    assert msgspec.structs.asdict(change.object.spec)["node_name"] is None  # type: ignore[union-attr]
