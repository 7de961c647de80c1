"""VolumeBinding through Reserve and the scheduling cycle: the decisions that go into
the BindRequest, the assumed volumes, and two pods of one batch never taking the same
volume."""

from __future__ import annotations

import msgspec

from contracts.messages import BindRequest
from services.framework.api.interface import CycleState
from services.framework.api.types import PodInfo
from services.framework.config import DEFAULT_PLUGINS, PluginRef, Plugins, PluginSet, Profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins import (
    nodevolumelimits,
    volumebinding,
    volumerestrictions,
    volumezone,
)
from services.framework.plugins.volumebinding import (
    VolumeBinding,
    VolumeBindingArgs,
    claim_bindings,
)
from services.framework.plugins.volumebinding.prebind import ClaimBinding
from services.framework.runtime.profile import merge_plugins
from tests.builders import make_pod
from tests.builders.scheduling import schedule_once
from tests.builders.volumes import claim_volume, make_pv, make_pvc, make_storage_class
from tests.unit.framework.plugins.volumes.helpers import host, listers_of, table_of

ENTRIES = (volumebinding.ENTRY, volumerestrictions.ENTRY, volumezone.ENTRY, nodevolumelimits.ENTRY)
WAIT_SC = make_storage_class("wait-sc")
FAST_SC = make_storage_class("fast", provisioner="ebs.csi.aws.com")


def reserve_on(node_name, pod, objects, nodes=None, plugin=None):
    plugin = plugin or VolumeBinding(VolumeBindingArgs().defaulted(), listers_of(*objects))
    table = table_of(nodes or [host(node_name)])
    state, info = CycleState(), PodInfo.of(pod)
    _, status = plugin.pre_filter(state, info, table)
    assert status.is_success(), status
    assert plugin.filter_all(state, info, table).passed.all()
    assert plugin.reserve(state, info, node_name).is_success()
    return plugin, state


def test_static_binding_is_finished_as_the_pv_controller_would():
    claim = make_pvc("data", storage_class="wait-sc", request="1Gi", access_modes=["RWO"])
    volume = make_pv("pv-1", storage_class="wait-sc", capacity="2Gi", access_modes=["RWO"])
    pod = make_pod("web", volumes=[claim_volume("data")])
    plugin, state = reserve_on("n1", pod, [WAIT_SC, claim, volume])
    (binding,) = claim_bindings(state)
    assert not binding.provision
    assert binding.volume is not None
    ref = binding.volume.spec.claim_ref
    assert ref is not None
    assert (ref.kind, ref.namespace, ref.name, ref.uid) == (
        "PersistentVolumeClaim",
        "default",
        "data",
        claim.metadata.uid,
    )
    assert binding.volume.status.phase == "Bound"
    assert binding.volume.metadata.annotations == {"pv.kubernetes.io/bound-by-controller": "yes"}
    bound = binding.claim
    assert bound.spec.volume_name == "pv-1"
    assert bound.status.phase == "Bound"
    assert bound.status.capacity == {"storage": "2Gi"}
    assert bound.status.access_modes == ["RWO"]
    assert bound.metadata.annotations == {
        "pv.kubernetes.io/bind-completed": "yes",
        "pv.kubernetes.io/bound-by-controller": "yes",
    }
    assert plugin.cache.volumes["pv-1"].obj.spec.claim_ref == ref


def test_provisioning_selects_the_node():
    claim = make_pvc("data", storage_class="fast")
    pod = make_pod("web", volumes=[claim_volume("data")])
    plugin, state = reserve_on("n1", pod, [FAST_SC, claim])
    (binding,) = claim_bindings(state)
    assert binding.provision
    assert binding.claim.metadata.annotations == {"volume.kubernetes.io/selected-node": "n1"}
    assert binding.claim.spec.volume_name is None
    assert "default/data" in plugin.cache.claims


def test_bound_claims_need_no_binding():
    claim = make_pvc("data", storage_class="wait-sc", volume_name="pv-1", bound=True)
    volume = make_pv("pv-1", storage_class="wait-sc", claim=("default", "data"), phase="Bound")
    pod = make_pod("web", volumes=[claim_volume("data")])
    _, state = reserve_on("n1", pod, [WAIT_SC, claim, volume])
    assert claim_bindings(state) == []
    assert claim_bindings(CycleState()) == []


async def test_unreserve_reverts_the_assumptions():
    claims = [make_pvc("a", storage_class="wait-sc"), make_pvc("b", storage_class="fast")]
    objects = [WAIT_SC, FAST_SC, *claims, make_pv("pv-1", storage_class="wait-sc")]
    pod = PodInfo.of(make_pod("web", volumes=[claim_volume("a"), claim_volume("b")]))
    plugin, state = reserve_on("n1", pod.pod, objects)
    assert set(plugin.cache.volumes) == {"pv-1"} and set(plugin.cache.claims) == {"default/b"}
    assert (await plugin.pre_bind(state, pod, "n1")).is_success()
    plugin.unreserve(state, pod, "n1")
    plugin.unreserve(state, pod, "n1")
    assert plugin.cache.volumes == {} and plugin.cache.claims == {}
    assert claim_bindings(state) == []


def test_assumed_volume_is_taken_until_its_pod_goes():
    objects = [
        WAIT_SC,
        make_pvc("a", storage_class="wait-sc"),
        make_pvc("b", storage_class="wait-sc"),
    ]
    objects.append(make_pv("pv-1", storage_class="wait-sc", hostname="n1"))
    first = make_pod("first", uid="first", volumes=[claim_volume("a")])
    plugin, _ = reserve_on("n1", first, objects)
    second = PodInfo.of(make_pod("second", volumes=[claim_volume("b")]))

    def second_fits(pods):
        table = table_of([host("n1")], pods)
        state = CycleState()
        plugin.pre_filter(state, second, table)
        return bool(plugin.filter_all(state, second, table).passed.all())

    first_on_node = make_pod("first", uid="first", node_name="n1", volumes=[claim_volume("a")])
    assert not second_fits([first_on_node])  # first is assumed (or bound) on n1
    assert "pv-1" in plugin.cache.volumes
    assert second_fits([])  # first's reservation expired: its volume is free again
    assert plugin.cache.volumes == {}


def test_assumption_ends_when_the_informer_records_the_binding():
    claim = make_pvc("a", storage_class="wait-sc")
    listers = listers_of(WAIT_SC, claim, make_pv("pv-1", storage_class="wait-sc"))
    plugin = VolumeBinding(VolumeBindingArgs().defaulted(), listers)
    pod = make_pod("first", uid="first", volumes=[claim_volume("a")])
    _, state = reserve_on("n1", pod, [], plugin=plugin)
    (binding,) = claim_bindings(state)
    assert binding.volume is not None
    listers.put(binding.volume)
    listers.put(binding.claim)
    placed = make_pod("first", uid="first", node_name="n1", volumes=[claim_volume("a")])
    plugin.cache.refresh(table_of([host("n1")], [placed]))
    assert plugin.cache.volumes == {}


# -- the scheduling cycle -------------------------------------------------------------


async def schedule_batch(pods, objects, nodes):
    registry = {**in_tree_registry(), **{e.name: e for e in ENTRIES}}
    enabled = tuple(PluginRef(e.name) for e in ENTRIES)
    profile = Profile(
        plugins=merge_plugins(DEFAULT_PLUGINS, Plugins(multi_point=PluginSet(enabled)))
    )
    return await schedule_once(pods, objects, nodes, profile, registry)


def volume_bindings(request: BindRequest) -> list[ClaimBinding]:
    """The bindings VolumeBinding handed on to the binder in the request."""
    raw = request.plugin_state.get("VolumeBinding")
    return [] if raw is None else msgspec.json.decode(raw, type=list[ClaimBinding])


async def test_two_pods_of_one_batch_take_different_volumes():
    objects = [
        WAIT_SC,
        make_pvc("data-0", storage_class="wait-sc", request="1Gi"),
        make_pvc("data-1", storage_class="wait-sc", request="1Gi"),
        make_pv("small", storage_class="wait-sc", capacity="1Gi", hostname="n1"),
        make_pv("large", storage_class="wait-sc", capacity="5Gi", hostname="n1"),
    ]
    pods = [make_pod(f"web-{i}", volumes=[claim_volume(f"data-{i}")]) for i in range(2)]
    outcome = await schedule_batch(pods, objects, [host("n1"), host("n2")])
    assert outcome.failures == []
    chosen = {}
    for request in outcome.binds:
        assert request.node == "n1"
        (binding,) = volume_bindings(request)
        assert binding.volume is not None
        chosen[binding.claim.metadata.name] = binding.volume.metadata.name
        assert binding.claim.spec.volume_name == binding.volume.metadata.name
    assert chosen == {"data-0": "small", "data-1": "large"}


async def test_the_second_pod_finds_no_volume_left():
    objects = [
        WAIT_SC,
        make_pvc("data-0", storage_class="wait-sc"),
        make_pvc("data-1", storage_class="wait-sc"),
        make_pv("only", storage_class="wait-sc", hostname="n1"),
    ]
    pods = [make_pod(f"web-{i}", volumes=[claim_volume(f"data-{i}")]) for i in range(2)]
    outcome = await schedule_batch(pods, objects, [host("n1"), host("n2")])
    ((bound,),) = [volume_bindings(r) for r in outcome.binds]
    assert bound.claim.metadata.name == "data-0"
    (failure,) = outcome.failures
    assert failure.result.outcome == "unschedulable"
    assert failure.result.plugins == ["VolumeBinding"]
    assert failure.result.message == (
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
        " no new claims to deallocate,"
        " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


async def test_seed_local_volume_places_the_pod_on_its_node():
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
    pod = make_pod("web", volumes=[claim_volume("data")])
    outcome = await schedule_batch(
        [pod], [local_pv, claim], [host("a"), host("my-node"), host("z")]
    )
    (request,) = outcome.binds
    assert request.node == "my-node"
    assert volume_bindings(request) == []
