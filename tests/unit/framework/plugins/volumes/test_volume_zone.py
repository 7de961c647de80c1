"""VolumeZone, with upstream's tables (volume_zone_test.go)."""

from __future__ import annotations

import pytest

from contracts.k8s import ObjectMeta, PersistentVolume
from services.framework.api.events import QueueingHint
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone
from services.framework.plugins.volumezone import LABEL_FAILURE_DOMAIN_BETA_REGION as BETA_REGION
from services.framework.plugins.volumezone import LABEL_FAILURE_DOMAIN_BETA_ZONE as BETA_ZONE
from services.framework.plugins.volumezone import LABEL_TOPOLOGY_REGION as REGION
from services.framework.plugins.volumezone import LABEL_TOPOLOGY_ZONE as ZONE
from tests.builders import make_node, make_pod
from tests.builders.volumes import claim_volume, make_pvc, make_storage_class
from tests.unit.framework.plugins.volumes.helpers import listers_of, statuses, table_of

CONFLICT = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_CONFLICT,))
SKIP = Status(Code.Skip)


def pv(name: str, **labels: str) -> PersistentVolume:
    return PersistentVolume(metadata=ObjectMeta(name=name, labels=labels))


def unresolvable(reason: str) -> Status:
    return Status(Code.UnschedulableAndUnresolvable, (reason,))


SINGLE_ZONE = [
    pv("Vol_1", **{BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", **{BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", **{BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", **{ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", **{REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", **{ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
MULTI_ZONE = [
    pv("Vol_1", **{BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", **{BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", **{BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", **{ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", **{ZONE: "us-west1-c__us-west1-a"}),
]
CLAIMS = [
    make_pvc(name, volume_name=volume)
    for name, volume in [
        ("PVC_1", "Vol_1"),
        ("PVC_2", "Vol_2"),
        ("PVC_3", "Vol_3"),
        ("PVC_4", "Vol_not_exist"),
        ("PVC_Stable_1", "Vol_Stable_1"),
        ("PVC_Stable_2", "Vol_Stable_2"),
        ("PVC_Stable_3", "Vol_Stable_3"),
    ]
]


def pod_with(claim: str | None):
    return make_pod("pod_1", volumes=[claim_volume(claim)] if claim else [])


def check(objects, pod, labels, *, pre_filter=True):
    plugin = VolumeZone(listers_of(*objects))
    nodes = table_of([make_node("host1", labels=labels)])
    state = CycleState()
    pre = Status()
    if pre_filter:
        _, pre = plugin.pre_filter(state, PodInfo.of(pod), nodes)
    return pre, statuses(plugin.filter_all(state, PodInfo.of(pod), nodes))[0]


USELESS = {"uselessLabel": "none"}


@pytest.mark.parametrize(
    ("claim", "labels", "want_pre", "want"),
    [
        pytest.param(None, {BETA_ZONE: "us-west1-a"}, SKIP, None, id="pod without volume"),
        pytest.param("PVC_1", {}, Status(), None, id="node without labels"),
        pytest.param(
            "PVC_1", {BETA_ZONE: "us-west1-a", **USELESS}, Status(), None, id="beta zone matched"
        ),
        pytest.param(
            "PVC_2", {BETA_REGION: "us-west1", **USELESS}, Status(), None, id="beta region matched"
        ),
        pytest.param(
            "PVC_2",
            {BETA_REGION: "no_us-west1", **USELESS},
            Status(),
            CONFLICT,
            id="beta region doesn't match",
        ),
        pytest.param(
            "PVC_1",
            {BETA_ZONE: "no_us-west1-a", **USELESS},
            Status(),
            CONFLICT,
            id="beta zone doesn't match",
        ),
        pytest.param(
            "PVC_Stable_1", {ZONE: "us-west1-a", **USELESS}, Status(), None, id="zone matched"
        ),
        pytest.param(
            "PVC_Stable_2", {REGION: "us-west1", **USELESS}, Status(), None, id="region matched"
        ),
        pytest.param(
            "PVC_Stable_2",
            {REGION: "no_us-west1", **USELESS},
            Status(),
            CONFLICT,
            id="region doesn't match",
        ),
        pytest.param(
            "PVC_Stable_1",
            {ZONE: "no_us-west1-a", **USELESS},
            Status(),
            CONFLICT,
            id="zone doesn't match",
        ),
        pytest.param(
            "PVC_Stable_3",
            {ZONE: "us-west1-a"},
            Status(),
            CONFLICT,
            id="pv with zone and region, node with only zone",
        ),
        pytest.param(
            "PVC_Stable_1",
            {BETA_ZONE: "us-west1-a"},
            Status(),
            CONFLICT,
            id="pv with zone, node with beta zone",
        ),
        pytest.param(
            "PVC_1", {ZONE: "us-west1-a"}, Status(), None, id="pv with beta label, node with ga"
        ),
        pytest.param(
            "PVC_1",
            {ZONE: "us-west1-b"},
            Status(),
            CONFLICT,
            id="pv with beta label, node with ga label, don't match",
        ),
    ],
)
def test_single_zone(claim, labels, want_pre, want):
    pre, status = check([*SINGLE_ZONE, *CLAIMS], pod_with(claim), labels)
    assert pre == want_pre
    if pre.is_success():
        assert status == want


@pytest.mark.parametrize(
    ("claim", "labels", "want"),
    [
        pytest.param("PVC_3", {}, None, id="node without labels"),
        pytest.param("PVC_3", {BETA_ZONE: "us-west1-a", **USELESS}, None, id="beta zone matched"),
        pytest.param(
            "PVC_1", {BETA_ZONE: "us-west1-b", **USELESS}, CONFLICT, id="beta zone doesn't match"
        ),
        pytest.param("PVC_Stable_2", {ZONE: "us-west1-a", **USELESS}, None, id="zone matched"),
        pytest.param(
            "PVC_Stable_1", {ZONE: "us-west1-b", **USELESS}, CONFLICT, id="zone doesn't match"
        ),
    ],
)
def test_multi_zone(claim, labels, want):
    pre, status = check([*MULTI_ZONE, *CLAIMS], pod_with(claim), labels)
    assert pre.is_success()
    assert status == want


BINDING_OBJECTS = [
    make_storage_class("Class_Immediate", mode=None),
    make_storage_class("Class_Wait"),
    pv("Vol_1", **{BETA_ZONE: "us-west1-a"}),
    make_pvc("PVC_1", volume_name="Vol_1"),
    make_pvc("PVC_NoSC", storage_class="Class_0"),
    make_pvc("PVC_EmptySC"),
    make_pvc("PVC_WaitSC", storage_class="Class_Wait"),
    make_pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
]
NO_NAMES = unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
NO_CLASS = unresolvable('storageclass.storage.k8s.io "Class_0" not found')
NO_PV_NAME = unresolvable("PersistentVolume had no name")


@pytest.mark.parametrize(
    ("claim", "want_pre", "want"),
    [
        pytest.param("PVC_1", Status(), None, id="label zone failure domain matched"),
        pytest.param("PVC_EmptySC", NO_NAMES, NO_NAMES, id="unbound volume empty storage class"),
        # The API server's NotFound text (upstream's table uses a fake lister's).
        pytest.param("PVC_NoSC", NO_CLASS, NO_CLASS, id="unbound volume no storage class"),
        # A class without volumeBindingMode is Immediate in ksched, as the API defaults it.
        pytest.param(
            "PVC_ImmediateSC", NO_PV_NAME, NO_PV_NAME, id="unbound volume immediate binding mode"
        ),
        pytest.param("PVC_WaitSC", SKIP, None, id="unbound volume wait binding mode"),
    ],
)
def test_with_binding(claim, want_pre, want):
    labels = {BETA_ZONE: "us-west1-a", **USELESS}
    pre, _ = check(BINDING_OBJECTS, pod_with(claim), labels)
    assert pre == want_pre
    _, status = check(BINDING_OBJECTS, pod_with(claim), labels, pre_filter=False)
    assert status == want


def test_missing_claim_and_volume():
    pre, _ = check(CLAIMS, pod_with("PVC_9"), {})
    assert pre == unresolvable('persistentvolumeclaim "PVC_9" not found')
    pre, _ = check(CLAIMS, pod_with("PVC_4"), {})
    assert pre == unresolvable('persistentvolume "Vol_not_exist" not found')


def test_every_node_at_once():
    plugin = VolumeZone(listers_of(*MULTI_ZONE, *CLAIMS))
    nodes = table_of(
        [
            make_node("a", labels={ZONE: "us-west1-a"}),
            make_node("b", labels={ZONE: "us-west1-b"}),
            make_node("c", labels={BETA_ZONE: "us-west1-c"}),
            make_node("plain"),
        ]
    )
    pod = PodInfo.of(pod_with("PVC_3"))
    state = CycleState()
    plugin.pre_filter(state, pod, nodes)
    assert statuses(plugin.filter_all(state, pod, nodes)) == [None, CONFLICT, None, None]


class TestHints:
    events = VolumeZone(listers_of()).events_to_register()

    def hint(self, index, pod, old=None, new=None):
        return self.events[index].queueing_hint(pod, old, new)

    def test_claim_of_the_pod(self):
        pod = pod_with("PVC_1")
        assert self.hint(2, pod, new=make_pvc("PVC_1", volume_name="Vol_1")) == QueueingHint.Queue
        assert self.hint(2, pod, new=make_pvc("PVC_2")) == QueueingHint.QueueSkip
        other = make_pvc("PVC_1", "ns1", volume_name="Vol_1")
        assert self.hint(2, pod, new=other) == QueueingHint.QueueSkip

    def test_class_added(self):
        pod = pod_with("PVC_1")
        assert self.hint(0, pod, new=make_storage_class("SC_1")) == QueueingHint.Queue
        assert self.hint(0, pod, new=make_storage_class("SC_1", mode=None)) == (
            QueueingHint.QueueSkip
        )

    def test_volume_topology_changed(self):
        pod = pod_with("PVC_1")
        a, b = pv("Vol_1", **{BETA_ZONE: "us-west1-a"}), pv("Vol_1", **{BETA_ZONE: "us-west1-b"})
        both = pv("Vol_1", **{BETA_ZONE: "us-west1-a", ZONE: "zone"})
        assert self.hint(3, pod, new=b) == QueueingHint.Queue
        assert self.hint(3, pod, old=a, new=b) == QueueingHint.Queue
        assert self.hint(3, pod, old=a, new=both) == QueueingHint.Queue
        assert self.hint(3, pod, old=both, new=both) == QueueingHint.QueueSkip
