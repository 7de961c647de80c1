"""VolumeRestrictions, with upstream's tables (volume_restrictions_test.go)."""

from __future__ import annotations

import pytest

from contracts.k8s import Volume
from services.framework.api.events import QueueingHint
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from tests.builders import make_pod
from tests.builders.volumes import claim_volume, inline_volume, make_pvc
from tests.unit.framework.plugins.volumes.helpers import (
    host,
    listers_of,
    run_pre_filter,
    statuses,
    table_of,
)

DISK_CONFLICT = Status(Code.Unschedulable, (ERR_REASON_DISK_CONFLICT,))
RWOP_CONFLICT = Status(Code.Unschedulable, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,))
GCE = inline_volume("gce_persistent_disk", pdName="foo")
GCE_2 = inline_volume("gce_persistent_disk", pdName="bar")
AWS = inline_volume("aws_elastic_block_store", volumeID="foo")
AWS_2 = inline_volume("aws_elastic_block_store", volumeID="bar")
RBD = inline_volume("rbd", monitors=["a", "b"], pool="foo", image="bar", fsType="ext4")
RBD_2 = inline_volume("rbd", monitors=["c", "d"], pool="foo", image="bar", fsType="ext4")
ISCSI = inline_volume(
    "iscsi", targetPortal="127.0.0.1:3260", iqn="iqn.2016-12.server:storage.target01", lun=0
)
ISCSI_2 = inline_volume(
    "iscsi", targetPortal="127.0.0.1:3260", iqn="iqn.2017-12.server:storage.target01", lun=0
)


def check(pod, existing=(), claims=()):
    """(PreFilter status, the node's Filter status or None); Filter runs only after a
    successful PreFilter, as the framework does."""
    pods = [make_pod(f"e{i}", uid=f"e{i}", node_name="n1", volumes=v) for i, v in existing]
    nodes = table_of([host("n1")], pods)
    plugin = VolumeRestrictions(listers_of(*claims))
    state, pre = run_pre_filter(plugin, pod, nodes)
    if not pre.is_success():
        return pre, None
    return pre, statuses(plugin.filter_all(state, PodInfo.of(pod), nodes))[0]


def with_volumes(*volumes: Volume):
    return make_pod("p", volumes=volumes)


SKIP = Status(Code.Skip)
OK = Status()


@pytest.mark.parametrize(
    ("same", "other"),
    [(GCE, GCE_2), (AWS, AWS_2), (RBD, RBD_2), (ISCSI, ISCSI_2)],
    ids=["GCE", "AWS", "RBD", "ISCSI"],
)
@pytest.mark.parametrize(
    ("case", "want_pre", "want"),
    [
        ("nothing", SKIP, None),
        ("one state", SKIP, None),
        ("same state", OK, DISK_CONFLICT),
        ("different state", OK, None),
    ],
)
def test_disk_conflicts(same, other, case, want_pre, want):
    pod, existing = {
        "nothing": (make_pod("p"), []),
        "one state": (make_pod("p"), [(0, [same])]),
        "same state": (with_volumes(same), [(0, [same])]),
        "different state": (with_volumes(other), [(0, [same])]),
    }[case]
    pre, status = check(pod, existing)
    assert pre == want_pre
    assert status == want


def test_volume_without_restrictions_is_skipped():
    pre, _ = check(with_volumes(Volume(name="volume with no restriction")))
    assert pre == SKIP


@pytest.mark.parametrize(
    ("mine", "theirs", "conflict"),
    [
        pytest.param({"readOnly": True}, {"readOnly": True}, False, id="GCE both read-only"),
        pytest.param({"readOnly": True}, {}, True, id="GCE one read-write"),
    ],
)
def test_gce_read_only_mounts_share(mine, theirs, conflict):
    pod = with_volumes(inline_volume("gce_persistent_disk", pdName="foo", **mine))
    existing = [(0, [inline_volume("gce_persistent_disk", pdName="foo", **theirs)])]
    assert (check(pod, existing)[1] == DISK_CONFLICT) is conflict


def test_rbd_default_pool_is_rbd():
    pod = with_volumes(inline_volume("rbd", monitors=["a"], image="img"))
    existing = [(0, [inline_volume("rbd", monitors=["a"], pool="rbd", image="img")])]
    assert check(pod, existing)[1] == DISK_CONFLICT


RWOP_1 = make_pvc("claim-with-rwop-1", access_modes=["ReadWriteOncePod"])
RWOP_2 = make_pvc("claim-with-rwop-2", access_modes=["ReadWriteOncePod"])
RWX = make_pvc("claim-with-rwx", access_modes=["ReadWriteMany"])
ONE_PVC = [claim_volume("claim-with-rwop-1")]
TWO_PVCS = [claim_volume("claim-with-rwop-1"), claim_volume("claim-with-rwop-2")]
RWX_PVC = [claim_volume("claim-with-rwx")]


@pytest.mark.parametrize(
    ("pod", "existing", "claims", "want_pre", "want"),
    [
        pytest.param(make_pod("p"), [], [], SKIP, None, id="nothing"),
        pytest.param(
            make_pod("p", volumes=ONE_PVC),
            [],
            [],
            Status(
                Code.UnschedulableAndUnresolvable,
                ('persistentvolumeclaim "claim-with-rwop-1" not found',),
            ),
            None,
            id="failed to get PVC",
        ),
        pytest.param(
            make_pod("p", volumes=ONE_PVC),
            [(0, RWX_PVC)],
            [RWOP_1, RWX],
            SKIP,
            None,
            id="no access mode conflict",
        ),
        pytest.param(
            make_pod("p", volumes=ONE_PVC),
            [(0, ONE_PVC), (1, RWX_PVC)],
            [RWOP_1, RWX],
            OK,
            RWOP_CONFLICT,
            id="access mode conflict, unschedulable",
        ),
        pytest.param(
            make_pod("p", volumes=TWO_PVCS),
            [(0, TWO_PVCS), (1, RWX_PVC)],
            [RWOP_1, RWOP_2, RWX],
            OK,
            RWOP_CONFLICT,
            id="two conflicts, unschedulable",
        ),
    ],
)
def test_access_mode_conflicts(pod, existing, claims, want_pre, want):
    pre, status = check(pod, existing, claims)
    assert pre == want_pre
    assert status == want


def test_read_write_once_pod_conflict_holds_on_every_node():
    user = make_pod("user", uid="user", node_name="n1", volumes=ONE_PVC)
    nodes = table_of([host("n1"), host("n2")], [user])
    plugin = VolumeRestrictions(listers_of(RWOP_1))
    pod = make_pod("p", volumes=ONE_PVC)
    state, pre = run_pre_filter(plugin, pod, nodes)
    assert pre.is_success()
    assert statuses(plugin.filter_all(state, PodInfo.of(pod), nodes)) == [RWOP_CONFLICT] * 2


def test_disk_conflict_is_reported_before_the_claim_conflict():
    user = make_pod("user", uid="user", node_name="n1", volumes=[*ONE_PVC, GCE])
    nodes = table_of([host("n1"), host("n2")], [user])
    plugin = VolumeRestrictions(listers_of(RWOP_1))
    pod = make_pod("p", volumes=[*ONE_PVC, GCE])
    state, _ = run_pre_filter(plugin, pod, nodes)
    assert statuses(plugin.filter_all(state, PodInfo.of(pod), nodes)) == [
        DISK_CONFLICT,
        RWOP_CONFLICT,
    ]


def test_preemption_removing_the_user_clears_the_conflict():
    user = make_pod("user", uid="user", node_name="n1", volumes=ONE_PVC)
    nodes = table_of([host("n1")], [user])
    plugin = VolumeRestrictions(listers_of(RWOP_1))
    pod = PodInfo.of(make_pod("p", volumes=ONE_PVC))
    state, _ = run_pre_filter(plugin, pod.pod, nodes)
    extensions = plugin.pre_filter_extensions()
    assert extensions is not None
    extensions.remove_pod(state, pod, PodInfo.of(user), "n1")
    assert statuses(plugin.filter_all(state, pod, nodes)) == [None]
    extensions.add_pod(state, pod, PodInfo.of(user), "n1")
    assert statuses(plugin.filter_all(state, pod, nodes)) == [RWOP_CONFLICT]


class TestHints:
    plugin = VolumeRestrictions(listers_of())

    def hint(self, index, pod, old=None, new=None):
        return self.plugin.events_to_register()[index].queueing_hint(pod, old, new)

    def test_deleted_pod_with_conflicting_disk(self):
        pod = with_volumes(GCE)
        assert self.hint(0, pod, old=make_pod("x", volumes=[GCE])) == QueueingHint.Queue
        assert self.hint(0, pod, old=make_pod("x", volumes=[GCE_2])) == QueueingHint.QueueSkip

    def test_deleted_pod_with_the_same_claim(self):
        pod = make_pod("p", volumes=ONE_PVC)
        assert self.hint(0, pod, old=make_pod("x", volumes=ONE_PVC)) == QueueingHint.Queue
        other_ns = make_pod("x", "other", volumes=ONE_PVC)
        assert self.hint(0, pod, old=other_ns) == QueueingHint.QueueSkip

    def test_claim_added(self):
        pod = make_pod("p", volumes=ONE_PVC)
        assert self.hint(2, pod, new=RWOP_1) == QueueingHint.Queue
        assert self.hint(2, pod, new=RWX) == QueueingHint.QueueSkip
        other_ns = make_pvc("claim-with-rwop-1", "other")
        assert self.hint(2, pod, new=other_ns) == QueueingHint.QueueSkip
