"""NodeVolumeLimits (CSILimits), with the CSI cases of upstream's csi_test.go.

ksched reads a driver's limit from the node's ``attachable-volumes-csi-<driver>``
allocatable (see the plugin's docstring), so "limitSource: csinode" becomes that key.
"""

from __future__ import annotations

import pytest

from contracts.k8s import Volume
from services.framework.api.events import QueueingHint
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status, StatusError
from services.framework.api.types import PodInfo
from services.framework.plugins.nodevolumelimits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    CSILimits,
    csi_attach_limit_key,
)
from tests.builders import make_pod
from tests.builders.volumes import (
    claim_volume,
    inline_volume,
    make_pv,
    make_pvc,
    make_storage_class,
)
from tests.unit.framework.plugins.volumes.helpers import host, listers_of, statuses, table_of

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EXCEEDED = Status(Code.Unschedulable, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,))
SKIP = Status(Code.Skip)


def csi_claims(driver: str, count: int = 4):
    """Claims ``csi-<driver>-<i>`` bound to CSI volumes of ``driver``."""
    for i in range(count):
        name = f"csi-{driver}-{i}"
        yield make_pvc(name, volume_name=name, bound=True)
        yield make_pv(name, csi=(driver, f"{driver}-vol-{i}"))


OBJECTS = [
    *csi_claims(EBS),
    *csi_claims(GCE),
    make_storage_class("csi-sc", provisioner=EBS),
    make_pvc("csi-4", storage_class="csi-sc"),
    make_pvc("csi-5", storage_class="missing-sc"),
    make_pvc("csi-6", storage_class="csi-sc", volume_name="missing-pv"),
    make_storage_class("in-tree-sc", provisioner="kubernetes.io/aws-ebs"),
    make_pvc("in-tree-0", storage_class="in-tree-sc"),
]

RUNNING = ("csi-ebs.csi.aws.com-3",)
EBS_ONE = ("csi-ebs.csi.aws.com-0",)
EBS_TWO = ("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2")
GCE_TWO = ("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2")


def check(new, existing=(), limits=None, objects=OBJECTS):
    plugin = CSILimits(listers_of(*objects))
    placed = [
        make_pod(f"e{i}", uid=f"e{i}", node_name="n1", volumes=p.spec.volumes)
        for i, p in enumerate(existing)
    ]
    extra = {csi_attach_limit_key(d): n for d, n in (limits or {}).items()}
    nodes = table_of([host("n1", extra=extra)], placed)
    state = CycleState()
    info = PodInfo.of(new)
    _, pre = plugin.pre_filter(state, info, nodes)
    if not pre.is_success():
        return pre, None
    return pre, statuses(plugin.filter_all(state, info, nodes))[0]


@pytest.mark.parametrize(
    ("new", "existing", "limits", "want"),
    [
        pytest.param(
            make_pod(claims=EBS_ONE),
            [make_pod(claims=RUNNING), make_pod(claims=EBS_TWO)],
            {EBS: 4},
            None,
            id="fits when node volume limit >= new pods CSI volume",
        ),
        pytest.param(
            make_pod(claims=EBS_ONE),
            [make_pod(claims=RUNNING), make_pod(claims=EBS_TWO)],
            {EBS: 2},
            EXCEEDED,
            id="doesn't when node volume limit <= pods CSI volume",
        ),
        pytest.param(
            make_pod(claims=EBS_ONE),
            [make_pod(claims=RUNNING), make_pod(claims=EBS_TWO)],
            {},
            None,
            id="should when driver does not support volume limits",
        ),
        pytest.param(
            make_pod(claims=EBS_ONE),
            [make_pod(claims=["csi-4"]), make_pod(claims=EBS_TWO)],
            {EBS: 2},
            EXCEEDED,
            id="count pending PVCs towards volume limit <= pods CSI volume",
        ),
        pytest.param(
            make_pod(claims=EBS_ONE),
            [make_pod(claims=["csi-4"]), make_pod(claims=["csi-4"]), make_pod(claims=EBS_TWO)],
            {EBS: 4},
            None,
            id="count multiple pending pvcs towards volume limit >= pods CSI volume",
        ),
        pytest.param(
            make_pod(claims=EBS_ONE),
            [make_pod(claims=["csi-6"]), make_pod(claims=EBS_TWO)],
            {EBS: 2},
            EXCEEDED,
            id="should count PVCs with invalid PV name but valid SC",
        ),
        pytest.param(
            make_pod(claims=EBS_ONE),
            [make_pod(claims=RUNNING), make_pod(claims=["csi-5"])],
            {EBS: 2},
            None,
            id="don't count pvcs with missing SC towards volume limit",
        ),
        pytest.param(
            make_pod(claims=EBS_ONE),
            [make_pod(claims=GCE_TWO), make_pod(claims=EBS_TWO)],
            {EBS: 2, GCE: 2},
            EXCEEDED,
            id="count pvcs with the same type towards volume limit",
        ),
        pytest.param(
            make_pod(claims=GCE_TWO),
            [make_pod(claims=EBS_TWO), make_pod(claims=RUNNING)],
            {EBS: 2, GCE: 2},
            None,
            id="don't count pvcs with different type towards volume limit",
        ),
        pytest.param(
            make_pod(claims=EBS_TWO),
            [make_pod(claims=EBS_TWO)],
            {EBS: 2},
            None,
            id="a volume the node already attaches is not counted again",
        ),
        pytest.param(
            make_pod(claims=["in-tree-0"]),
            [make_pod(claims=EBS_TWO)],
            {EBS: 2},
            None,
            id="in-tree provisioners count only once migrated (never without CSINode)",
        ),
        pytest.param(
            make_pod(volumes=(inline_volume("aws_elastic_block_store", volumeID="aws-inline1"),)),
            [make_pod(claims=EBS_TWO)],
            {EBS: 2},
            None,
            id="nil csi node: inline in-tree volumes are not counted",
        ),
    ],
)
def test_csi_limits(new, existing, limits, want):
    pre, status = check(new, existing, limits)
    assert pre.is_success()
    assert status == want


def test_pods_without_claims_skip_the_filter():
    only_config = make_pod("p", volumes=[Volume(name="c", config_map={}), Volume(secret={})])
    assert check(only_config)[0] == SKIP
    with_claim = make_pod("p", volumes=[*only_config.spec.volumes, claim_volume(EBS_ONE[0])])
    assert check(with_claim, limits={EBS: 1}) == (Status(), None)


def test_missing_claim_of_the_new_pod_is_unresolvable():
    _, status = check(make_pod("p", "test", volumes=[claim_volume("nope")]), limits={EBS: 2})
    assert status == Status(
        Code.UnschedulableAndUnresolvable,
        ('looking up PVC test/nope: persistentvolumeclaim "nope" not found',),
    )


EPHEMERAL_POD = make_pod("abc", "test", uid="12345", volumes=[Volume(name="xyz", ephemeral={})])


def test_ephemeral_volumes():
    owned = make_pvc("abc-xyz", "test", storage_class="csi-sc", owner_uid="12345")
    assert check(EPHEMERAL_POD, limits={EBS: 1}, objects=[*OBJECTS, owned]) == (Status(), None)
    full = [make_pod(claims=EBS_ONE)]
    assert check(EPHEMERAL_POD, full, {EBS: 1}, [*OBJECTS, owned])[1] == EXCEEDED
    _, missing = check(EPHEMERAL_POD, limits={EBS: 1})
    assert missing == Status(
        Code.UnschedulableAndUnresolvable,
        ('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found',),
    )
    conflicting = make_pvc("abc-xyz", "test", storage_class="csi-sc")
    with pytest.raises(StatusError, match=r"PVC test/abc-xyz was not created for pod test/abc"):
        check(EPHEMERAL_POD, limits={EBS: 1}, objects=[*OBJECTS, conflicting])


def test_limit_keys():
    assert csi_attach_limit_key(EBS) == "attachable-volumes-csi-ebs.csi.aws.com"
    long = "a-very-long-csi-driver-name.storage.example.com"
    key = csi_attach_limit_key(long)
    assert key.startswith("attachable-volumes-csi-a-very-long-csi-driver")
    assert len(key) == len("attachable-volumes-csi-") + 23 + 16


def test_only_nodes_with_a_limit_are_limited():
    plugin = CSILimits(listers_of(*OBJECTS))
    key = csi_attach_limit_key(EBS)
    busy = [
        make_pod(f"e{n}", uid=f"e{n}", node_name=n, volumes=[claim_volume(EBS_ONE[0])])
        for n in ("limited", "free")
    ]
    nodes = table_of([host("limited", extra={key: 1}), host("free")], busy)
    new = PodInfo.of(make_pod(claims=EBS_TWO))
    state = CycleState()
    plugin.pre_filter(state, new, nodes)
    assert statuses(plugin.filter_all(state, new, nodes)) == [EXCEEDED, None]


class TestHints:
    events = CSILimits(listers_of()).events_to_register()

    def hint(self, index, target, old=None, new=None):
        return self.events[index].queueing_hint(target, old, new)

    def test_deleted_pod(self):
        target = make_pod(claims=EBS_ONE)
        bound = make_pod("x", node_name="n1", volumes=[claim_volume("c")])
        assert self.hint(2, target, old=bound) == QueueingHint.Queue
        assert self.hint(2, target, old=make_pod("x", volumes=[claim_volume("c")])) == (
            QueueingHint.QueueSkip
        )
        no_volumes = make_pod("x", node_name="n1")
        assert self.hint(2, target, old=no_volumes) == QueueingHint.QueueSkip

    def test_claim_added(self):
        target = make_pod("p", volumes=[claim_volume("c")])
        assert self.hint(3, target, new=make_pvc("c")) == QueueingHint.Queue
        assert self.hint(3, target, new=make_pvc("d")) == QueueingHint.QueueSkip
        assert self.hint(3, target, new=make_pvc("c", "other")) == QueueingHint.QueueSkip
