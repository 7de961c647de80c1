"""VolumeBinding's PreFilter and Filter, with upstream's TestVolumeBinding table and
the cases ksched adds (the seed's local volume, WaitForFirstConsumer matching,
provisioning)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from contracts.k8s import LabelSelector, Volume
from services.framework.api.interface import CycleState, PreFilterResult
from services.framework.api.registry import ConfigError
from services.framework.api.status import Code, Status, StatusError
from services.framework.api.types import PodInfo
from services.framework.plugins.volumebinding import ENTRY, VolumeBinding, VolumeBindingArgs
from services.framework.plugins.volumebinding.matching import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
)
from services.framework.plugins.volumebinding.plugin import StateData
from tests.builders import make_pod
from tests.builders.volumes import (
    HOSTNAME,
    IMMEDIATE,
    claim_volume,
    make_pv,
    make_pvc,
    make_storage_class,
)
from tests.unit.framework.plugins.volumes.helpers import host, listers_of, statuses, table_of

IMMEDIATE_SC = make_storage_class("immediate-sc", mode=IMMEDIATE)
WAIT_SC = make_storage_class("wait-sc")
WAIT_HDD_SC = make_storage_class("wait-hdd-sc")
CLASSES = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC]
SKIP = Status(Code.Skip)
OK = Status()
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UnschedulableAndUnresolvable, reasons)


BIND_CONFLICT = unresolvable(ERR_REASON_BIND_CONFLICT)


def pod_with(*claims: str):
    return make_pod("pod-a", volumes=[claim_volume(c) for c in claims])


def run(pod, nodes, objects):
    """(PreFilter result, PreFilter status, Filter statuses or None, plugin, state)."""
    plugin = VolumeBinding(VolumeBindingArgs().defaulted(), listers_of(*CLASSES, *objects))
    table = table_of(nodes)
    state = CycleState()
    info = PodInfo.of(pod)
    result, status = plugin.pre_filter(state, info, table)
    filtered = None
    if status.is_success():
        filtered = statuses(plugin.filter_all(state, info, table))
    return result, status, filtered, plugin, state


LOCAL_CAPACITY = [
    make_pv("pv-a-0", storage_class="wait-sc", capacity="200Gi", hostname="node-a"),
    make_pv("pv-a-1", storage_class="wait-sc", capacity="200Gi", hostname="node-a"),
    make_pv("pv-b-0", storage_class="wait-sc", capacity="100Gi", hostname="node-b"),
    make_pv("pv-b-1", storage_class="wait-sc", capacity="100Gi", hostname="node-b"),
]


def zonal(name, size, zone):
    return make_pv(
        name,
        storage_class="wait-sc",
        capacity=size,
        node_affinity={REGION: [f"region-{zone}"], ZONE: [f"zone-{zone}"]},
    )


ZONAL_NODES = [
    host(f"zone-{z}-node-{n}", {REGION: f"region-{z}", ZONE: f"zone-{z}"})
    for z in "abc"
    for n in "ab"
]


@pytest.mark.parametrize(
    ("pod", "nodes", "objects", "want_result", "want_pre", "want_filter"),
    [
        pytest.param(
            make_pod("pod-a"), [host("node-a")], [], None, SKIP, None, id="pod has not pvcs"
        ),
        pytest.param(
            pod_with("pvc-a"),
            [host("node-a")],
            [
                make_pvc("pvc-a", storage_class="wait-sc", volume_name="pv-a", bound=True),
                make_pv("pv-a", storage_class="wait-sc"),
            ],
            None,
            OK,
            [None],
            id="all bound",
        ),
        pytest.param(
            pod_with("pvc-a", "pvc-b"),
            [host("node-a")],
            [
                make_pvc("pvc-a", storage_class="wait-sc", volume_name="pv-a", bound=True),
                make_pvc("pvc-b", storage_class="wait-sc", volume_name="pv-b", bound=True),
                make_pv("pv-a", storage_class="wait-sc", phase="Bound", hostname="node-a"),
                make_pv("pv-b", storage_class="wait-sc", phase="Bound", hostname="node-a"),
            ],
            PreFilterResult(frozenset({"node-a"})),
            OK,
            [None],
            id="all bound with local volumes",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [host("node-a")],
            [],
            None,
            unresolvable('persistentvolumeclaim "pvc-a" not found'),
            None,
            id="PVC does not exist",
        ),
        pytest.param(
            pod_with("pvc-a", "pvc-b"),
            [host("node-a")],
            [make_pvc("pvc-a", storage_class="wait-sc", volume_name="pv-a", bound=True)],
            None,
            unresolvable('persistentvolumeclaim "pvc-b" not found'),
            None,
            id="Part of PVCs do not exist",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [host("node-a")],
            [make_pvc("pvc-a", storage_class="immediate-sc")],
            None,
            unresolvable("pod has unbound immediate PersistentVolumeClaims"),
            None,
            id="immediate claims not bound",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [host("node-a")],
            [make_pvc("pvc-a", storage_class="wait-sc")],
            None,
            OK,
            [BIND_CONFLICT],
            id="unbound claims no matches",
        ),
        pytest.param(
            pod_with("pvc-a", "pvc-b"),
            [host("node-a", {"foo": "barbar"})],
            [
                make_pvc("pvc-a", storage_class="wait-sc", volume_name="pv-a", bound=True),
                make_pvc("pvc-b", storage_class="wait-sc"),
                make_pv("pv-a", storage_class="wait-sc", node_affinity={"foo": ["bar"]}),
            ],
            None,
            OK,
            [unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
            id="bound and unbound unsatisfied",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [host("node-a")],
            [make_pvc("pvc-a", storage_class="wait-sc", volume_name="pv-a", bound=True)],
            None,
            OK,
            [unresolvable(ERR_REASON_PV_NOT_EXIST)],
            id="pv not found",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [host("node-a")],
            [
                make_pvc(
                    "pvc-a", storage_class="wait-sc", volume_name="pv-a", bound=True, phase="Lost"
                )
            ],
            None,
            unresolvable(
                'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'
            ),
            None,
            id="pv not found claim lost",
        ),
        pytest.param(
            pod_with("pvc-a"),
            [host("node-a"), host("node-b"), host("node-c")],
            [make_pvc("pvc-a", storage_class="wait-sc", request="50Gi"), *LOCAL_CAPACITY],
            None,
            OK,
            [None, None, BIND_CONFLICT],
            id="local volumes with close capacity are preferred",
        ),
        pytest.param(
            pod_with("pvc-a"),
            ZONAL_NODES,
            [
                make_pvc("pvc-a", storage_class="wait-sc", request="50Gi"),
                zonal("pv-a-0", "200Gi", "a"),
                zonal("pv-a-1", "200Gi", "a"),
                zonal("pv-b-0", "100Gi", "b"),
                zonal("pv-b-1", "100Gi", "b"),
            ],
            None,
            OK,
            [None, None, None, None, BIND_CONFLICT, BIND_CONFLICT],
            id="zonal volumes with close capacity are preferred",
        ),
    ],
)
def test_volume_binding(pod, nodes, objects, want_result, want_pre, want_filter):
    result, status, filtered, plugin, state = run(pod, nodes, objects)
    assert status == want_pre
    assert result == want_result
    assert filtered == want_filter
    if status.is_success():
        # StorageCapacityScoring is off: no score.
        assert plugin.pre_score(state, PodInfo.of(pod), table_of(nodes), None) == SKIP


def test_seed_local_volume_bound_to_the_claim_allows_only_its_node():
    """Seed 002: a local PV pinned to my-node, bound to the pod's claim."""
    local_pv = make_pv(
        "example-local-pv",
        storage_class="local-storage",
        capacity="500Gi",
        access_modes=["ReadWriteOnce"],
        phase="Bound",
        hostname="my-node",
        claim=("default", "data"),
    )
    claim = make_pvc(
        "data", storage_class="local-storage", volume_name="example-local-pv", phase="Bound"
    )
    nodes = [host("my-node"), host("other-node"), host("third-node")]
    result, status, filtered, _, _ = run(pod_with("data"), nodes, [local_pv, claim])
    assert status.is_success()
    assert result == PreFilterResult(frozenset({"my-node"}))
    conflict = unresolvable(ERR_REASON_NODE_CONFLICT)
    assert filtered == [None, conflict, conflict]


def test_seed_local_volume_waiting_for_the_first_consumer():
    local_class = make_storage_class("local-storage", provisioner="kubernetes.io/no-provisioner")
    local_pv = make_pv(
        "example-local-pv",
        storage_class="local-storage",
        capacity="500Gi",
        access_modes=["ReadWriteOnce"],
        hostname="my-node",
    )
    claim = make_pvc(
        "data", storage_class="local-storage", request="100Gi", access_modes=["ReadWriteOnce"]
    )
    nodes = [host("other-node"), host("my-node")]
    objects = [local_class, local_pv, claim]
    _, status, filtered, _, state = run(pod_with("data"), nodes, objects)
    assert status.is_success()
    assert filtered == [BIND_CONFLICT, None]
    volumes = state.read("VolumeBinding", StateData).volumes_for("my-node")
    assert volumes is not None
    assert [(c.metadata.name, v.metadata.name) for c, v in volumes.static_bindings] == [
        ("data", "example-local-pv")
    ]
    assert volumes.dynamic_provisions == ()


def matched(objects, claims=("pvc-a",), nodes=None):
    """Per node: claim → the volume chosen (or "provision"), None if the node fails."""
    nodes = nodes or [host("node-a")]
    _, status, filtered, _, state = run(pod_with(*claims), nodes, objects)
    assert status.is_success(), status
    data = state.read("VolumeBinding", StateData)
    out = []
    for node, verdict in zip(nodes, filtered, strict=True):
        volumes = data.volumes_for(node.metadata.name)
        if verdict is not None:
            assert volumes is None
            out.append(None)
            continue
        assert volumes is not None
        chosen = {c.metadata.name: v.metadata.name for c, v in volumes.static_bindings}
        chosen |= {c.metadata.name: "provision" for c in volumes.dynamic_provisions}
        out.append(chosen)
    return out


class TestMatching:
    def test_smallest_fitting_volume_wins(self):
        objects = [
            make_pvc("pvc-a", storage_class="wait-sc", request="10Gi"),
            make_pv("big", storage_class="wait-sc", capacity="100Gi"),
            make_pv("small", storage_class="wait-sc", capacity="20Gi"),
            make_pv("too-small", storage_class="wait-sc", capacity="5Gi"),
        ]
        assert matched(objects) == [{"pvc-a": "small"}]

    @pytest.mark.parametrize(
        "volume",
        [
            make_pv("v", storage_class="wait-hdd-sc", capacity="20Gi"),
            make_pv("v", storage_class="wait-sc", capacity="20Gi", access_modes=["ReadOnlyMany"]),
            make_pv("v", storage_class="wait-sc", capacity="20Gi", phase="Released"),
            make_pv("v", storage_class="wait-sc", capacity="20Gi", volume_mode="Block"),
            make_pv("v", storage_class="wait-sc", capacity="20Gi", claim=("default", "other")),
        ],
        ids=["other class", "access modes", "not available", "volume mode", "another claim"],
    )
    def test_unsuitable_volumes(self, volume):
        claim = make_pvc(
            "pvc-a", storage_class="wait-sc", request="10Gi", access_modes=["ReadWriteOnce"]
        )
        assert matched([claim, volume]) == [None]

    def test_volume_without_phase_is_available(self):
        objects = [
            make_pvc("pvc-a", storage_class="wait-sc"),
            make_pv("v", storage_class="wait-sc", phase=None),
        ]
        assert matched(objects) == [{"pvc-a": "v"}]

    def test_claim_selector(self):
        claim = make_pvc("pvc-a", storage_class="wait-sc")
        selector = LabelSelector(match_labels={"tier": "ssd"})
        selective = replace(claim, spec=replace(claim.spec, selector=selector))
        objects = [
            selective,
            make_pv("plain", storage_class="wait-sc"),
            make_pv("ssd", storage_class="wait-sc", capacity="1Ti", labels={"tier": "ssd"}),
        ]
        assert matched(objects) == [{"pvc-a": "ssd"}]

    def test_pre_bound_volume_decides(self):
        objects = [
            make_pvc("pvc-a", storage_class="wait-sc", request="1Gi"),
            make_pv("a-small", storage_class="wait-sc", capacity="1Gi"),
            make_pv(
                "b-prebound", storage_class="wait-sc", capacity="1Ti", claim=("default", "pvc-a")
            ),
            make_pv(
                "c-other-uid",
                storage_class="wait-sc",
                capacity="1Ti",
                hostname="node-b",
                claim=("default", "pvc-a", "other-uid"),
            ),
        ]
        assert matched(objects, nodes=[host("node-a"), host("node-b")]) == [
            {"pvc-a": "b-prebound"},
            {"pvc-a": "b-prebound"},
        ]

    def test_two_claims_take_two_volumes(self):
        objects = [
            make_pvc("pvc-0", storage_class="wait-sc", request="50Gi"),
            make_pvc("pvc-1", storage_class="wait-sc", request="10Gi"),
            make_pv("v-20", storage_class="wait-sc", capacity="20Gi"),
            make_pv("v-60", storage_class="wait-sc", capacity="60Gi"),
            make_pv("v-100", storage_class="wait-sc", capacity="100Gi"),
        ]
        assert matched(objects, claims=("pvc-0", "pvc-1")) == [{"pvc-1": "v-20", "pvc-0": "v-60"}]

    def test_per_node_choices(self):
        objects = [
            make_pvc("pvc-a", storage_class="wait-sc", request="50Gi"),
            make_pvc("pvc-b", storage_class="wait-sc", request="50Gi"),
            *LOCAL_CAPACITY,
        ]
        assert matched(objects, ("pvc-a", "pvc-b"), [host("node-a"), host("node-b")]) == [
            {"pvc-a": "pv-a-0", "pvc-b": "pv-a-1"},
            {"pvc-a": "pv-b-0", "pvc-b": "pv-b-1"},
        ]


class TestProvisioning:
    def test_class_with_a_provisioner(self):
        objects = [
            make_storage_class("fast", provisioner="ebs.csi.aws.com"),
            make_pvc("pvc-a", storage_class="fast"),
        ]
        assert matched(objects, nodes=[host("a"), host("b")]) == [
            {"pvc-a": "provision"},
            {"pvc-a": "provision"},
        ]

    def test_allowed_topologies(self):
        objects = [
            make_storage_class(
                "fast", provisioner="ebs.csi.aws.com", allowed_topologies=[{ZONE: ["z1"]}]
            ),
            make_pvc("pvc-a", storage_class="fast"),
        ]
        nodes = [host("a", {ZONE: "z1"}), host("b", {ZONE: "z2"}), host("c")]
        assert matched(objects, nodes=nodes) == [{"pvc-a": "provision"}, None, None]

    def test_no_provisioner(self):
        objects = [
            make_storage_class("local", provisioner="kubernetes.io/no-provisioner"),
            make_pvc("pvc-a", storage_class="local"),
        ]
        assert matched(objects) == [None]

    def test_matching_volume_before_provisioning(self):
        objects = [
            make_storage_class("fast", provisioner="ebs.csi.aws.com"),
            make_pvc("pvc-a", storage_class="fast"),
            make_pv("v", storage_class="fast", hostname="a"),
        ]
        assert matched(objects, nodes=[host("a"), host("b")]) == [
            {"pvc-a": "v"},
            {"pvc-a": "provision"},
        ]

    def test_selected_node_is_the_only_node(self):
        objects = [
            make_storage_class("fast", provisioner="ebs.csi.aws.com"),
            make_pvc(
                "pvc-a",
                storage_class="fast",
                annotations={"volume.kubernetes.io/selected-node": "b"},
            ),
        ]
        assert matched(objects, nodes=[host("a"), host("b")]) == [None, {"pvc-a": "provision"}]


def test_ephemeral_claim_must_exist_and_belong_to_the_pod():
    pod = make_pod("abc", uid="12345", volumes=[Volume(name="v", ephemeral={})])
    _, status, _, _, _ = run(pod, [host("a")], [])
    assert status == unresolvable(
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "abc-v"'
    )
    foreign = make_pvc("abc-v", storage_class="wait-sc")
    _, status, _, _, _ = run(pod, [host("a")], [foreign])
    assert status == unresolvable(
        "PVC default/abc-v was not created for pod default/abc (pod is not owner)"
    )
    owned = make_pvc("abc-v", storage_class="wait-sc", owner_uid="12345")
    _, status, filtered, _, _ = run(pod, [host("a")], [owned])
    assert (status, filtered) == (OK, [BIND_CONFLICT])


def test_claim_being_deleted():
    claim = make_pvc("pvc-a", storage_class="wait-sc", deletion_timestamp="2024-01-01T00:00:00Z")
    _, status, _, _, _ = run(pod_with("pvc-a"), [host("a")], [claim])
    assert status == unresolvable('persistentvolumeclaim "pvc-a" is being deleted')


def test_pre_bound_claim_is_an_unbound_immediate_claim():
    claim = make_pvc("pvc-a", storage_class="wait-sc", volume_name="pv-a")
    _, status, _, _, _ = run(pod_with("pvc-a"), [host("a")], [claim, make_pv("pv-a")])
    assert status == unresolvable("pod has unbound immediate PersistentVolumeClaims")


def test_provisioning_a_claim_of_a_vanished_class_is_an_error():
    claim = make_pvc("pvc-a", storage_class="wait-sc")
    plugin = VolumeBinding(VolumeBindingArgs().defaulted(), listers_of(WAIT_SC, claim))
    nodes = table_of([host("a")])
    state, info = CycleState(), PodInfo.of(pod_with("pvc-a"))
    plugin.pre_filter(state, info, nodes)
    plugin._listers.put(WAIT_SC, deleted=True)
    with pytest.raises(StatusError, match='failed to find storage class "wait-sc"'):
        plugin.filter_all(state, info, nodes)


class TestArgs:
    def test_defaults(self):
        args = ENTRY.decode_args(None, "pluginConfig[0].args")
        assert args == VolumeBindingArgs(bind_timeout_seconds=600)
        assert ENTRY.decode_args({"bindTimeoutSeconds": 300}, "p") == VolumeBindingArgs(
            bind_timeout_seconds=300
        )

    def test_negative_timeout(self):
        with pytest.raises(ConfigError) as err:
            ENTRY.decode_args({"bindTimeoutSeconds": -10}, "args")
        assert err.value.field == "args.bindTimeoutSeconds"
        assert "invalid BindTimeoutSeconds, should not be a negative value" in err.value.reason

    def test_shape_needs_the_feature_gate(self):
        shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        with pytest.raises(ConfigError) as err:
            ENTRY.decode_args({"shape": shape}, "args")
        assert err.value.field == "args.shape"
        assert "turn on the feature gate StorageCapacityScoring" in err.value.reason

    def test_unknown_field(self):
        with pytest.raises(ConfigError):
            ENTRY.decode_args({"bindTimeout": 1}, "args")


def test_hostname_label_must_match_the_node_name():
    """Eligible nodes come from the volume's hostname values, as upstream assumes
    ``kubernetes.io/hostname`` equals the node name."""
    claim = make_pvc("pvc-a", storage_class="wait-sc", volume_name="pv-a", bound=True)
    volume = make_pv("pv-a", storage_class="wait-sc", node_affinity={HOSTNAME: ["a", "b"]})
    result, _, filtered, _, _ = run(pod_with("pvc-a"), [host("a"), host("c")], [claim, volume])
    assert result == PreFilterResult(frozenset({"a", "b"}))
    assert filtered == [None, unresolvable(ERR_REASON_NODE_CONFLICT)]


def test_many_local_volumes():
    """Local volumes on many nodes: each node can take only its own."""
    nodes = [host(f"n{i}") for i in range(200)]
    volumes = [
        make_pv(f"pv-{i}", storage_class="wait-sc", hostname=f"n{i}") for i in range(0, 200, 2)
    ]
    claim = make_pvc("pvc-a", storage_class="wait-sc")
    _, status, filtered, _, state = run(pod_with("pvc-a"), nodes, [claim, *volumes])
    assert status.is_success()
    assert filtered == [None if i % 2 == 0 else BIND_CONFLICT for i in range(200)]
    volumes_on = state.read("VolumeBinding", StateData).volumes_for("n42")
    assert volumes_on is not None
    assert [v.metadata.name for _, v in volumes_on.static_bindings] == ["pv-42"]
