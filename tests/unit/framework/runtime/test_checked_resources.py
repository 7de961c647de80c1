"""What the scheduler's store reservation re-checks comes from the profile's filters
(``Framework.checked_resources``), and travels in the Reservation."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.messages import ScheduleRequest
from services.common.store import MemoryStore, Reservation
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.config import load_config
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from tests.builders import make_node, make_pod
from tests.builders.scheduling import batch_scheduler

REQUESTS: dict[str, str | int] = {
    "cpu": "1",
    "memory": "1Gi",
    "example.com/gpu": 1,
    "other.io/fpga": 1,
}


def profile(**fields: Any) -> Any:
    document = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", **fields}],
    }
    return load_config(document).profiles[0]


FIT_ARGS_IGNORING = {
    "pluginConfig": [
        {
            "name": "NodeResourcesFit",
            "args": {
                "ignoredResources": ["example.com/gpu"],
                "ignoredResourceGroups": ["other.io"],
            },
        }
    ]
}


ALL = [{"name": "*"}]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, {"pods", "cpu", "memory", "example.com/gpu", "other.io/fpga"}),
        (FIT_ARGS_IGNORING, {"pods", "cpu", "memory"}),
        ({"plugins": {"filter": {"disabled": [{"name": "NodeResourcesFit"}]}}}, set()),
        ({"plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}}, set()),
        ({"plugins": {"filter": {"disabled": ALL}}}, set()),
    ],
    ids=["default", "ignored-resources-and-groups", "fit-filter-off", "fit-off", "no-filters"],
)
def test_checked_resources_follow_the_enabled_filters(
    fields: dict[str, Any], expected: set[str]
) -> None:
    framework = Framework(profile(**fields), in_tree_registry())
    pod = PodInfo.of(make_pod("p", requests=REQUESTS))
    assert framework.checked_resources(pod) == expected


class RecordingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reservations: list[Reservation] = []

    async def assume(self, reservations: Any, now: float) -> Any:
        self.reservations.extend(reservations)
        return await super().assume(reservations, now)


@pytest.mark.parametrize(
    ("fields", "checked"),
    [
        ({}, {"pods", "cpu", "memory"}),
        ({"plugins": {"filter": {"disabled": ALL}}}, set()),
    ],
    ids=["default", "no-filters"],
)
async def test_the_reservation_carries_what_the_profile_checks(
    fields: dict[str, Any], checked: set[str]
) -> None:
    snapshot = Cache()
    node = make_node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 10})
    pod = make_pod("p", requests={"cpu": "1", "memory": "1Gi"})
    snapshot.load({"n1": _encode(node)}, {}, 0, {})
    framework = Framework(profile(**fields), in_tree_registry(), listers=snapshot.listers)
    store = RecordingStore()
    await store.set_leases({pod.metadata.uid: 1})
    scheduler, _ = batch_scheduler(snapshot, store, [pod], framework=framework, retries=0)
    request = ScheduleRequest(
        uid=pod.metadata.uid,
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        attempt=1,
        profile="default-scheduler",
        seq=0,
    )
    await scheduler.run([request])
    [reservation] = store.reservations
    assert reservation.checked == frozenset(checked)
    assert dict(reservation.requests) == {"cpu": 1000, "memory": 1 << 30, "pods": 1}


def _encode(obj: object) -> bytes:
    return msgspec.json.encode(obj)
