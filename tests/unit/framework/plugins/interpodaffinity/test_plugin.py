"""Args (defaults, validation), the registry entry, events to register, queueing hints
and NormalizeScore's integer math."""

from __future__ import annotations

import numpy as np
import pytest

from contracts.k8s import Pod
from services.framework.api.events import ActionType, ClusterEvent, EventResource, QueueingHint
from services.framework.api.interface import Handle
from services.framework.api.registry import ConfigError
from services.framework.plugins.interpodaffinity import (
    ENTRY,
    NAME,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from services.framework.plugins.interpodaffinity.hints import after_node_change, after_pod_change
from services.framework.plugins.interpodaffinity.scoring import normalize
from tests.builders import make_node, make_pod
from tests.builders.selectors import pod_affinity
from tests.unit.framework.plugins.interpodaffinity.support import exists, fresh, in_, term


def test_entry():
    assert ENTRY.name == NAME == "InterPodAffinity"
    assert ENTRY.plugin_type is InterPodAffinity
    assert ENTRY.args_type is InterPodAffinityArgs
    plugin = ENTRY.factory(None, Handle("default-scheduler"))
    assert isinstance(plugin, InterPodAffinity)
    assert plugin.hard_weight == 1
    assert plugin.pre_filter_extensions() is plugin


def test_args_defaults():
    args = ENTRY.decode_args(None, "pluginConfig[0].args")
    assert args == InterPodAffinityArgs(
        hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False
    )


def test_args_decode_and_keep_an_explicit_zero():
    raw = {
        "kind": "InterPodAffinityArgs",
        "hardPodAffinityWeight": 0,
        "ignorePreferredTermsOfExistingPods": True,
    }
    args = ENTRY.decode_args(raw, "p")
    assert args == InterPodAffinityArgs(
        hard_pod_affinity_weight=0, ignore_preferred_terms_of_existing_pods=True
    )


@pytest.mark.parametrize("weight", [-1, 101])
def test_args_weight_out_of_range(weight):
    with pytest.raises(ConfigError) as err:
        ENTRY.decode_args({"hardPodAffinityWeight": weight}, "profiles[0].pluginConfig[1].args")
    assert err.value.field == "profiles[0].pluginConfig[1].args.hardPodAffinityWeight"
    assert err.value.reason == f"Invalid value: {weight}: not in valid range [0, 100]"


def test_args_unknown_field():
    with pytest.raises(ConfigError) as err:
        ENTRY.decode_args({"hardWeight": 1}, "args")
    assert err.value.field == "args.hardWeight"


def test_events_to_register():
    plugin = ENTRY.factory(None, Handle("default-scheduler"))
    events = {e.event: e.queueing_hint for e in plugin.events_to_register()}
    pods = ClusterEvent(
        EventResource.Pod, ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete
    )
    nodes = ClusterEvent(
        EventResource.Node,
        ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint,
    )
    assert events == {pods: after_pod_change, nodes: after_node_change}
    assert pods.matches(ClusterEvent(EventResource.AssignedPod, ActionType.UpdatePodLabel))
    assert not pods.matches(ClusterEvent(EventResource.AssignedPod, ActionType.UpdatePodScaleDown))


WANTS_DB = make_pod(
    fresh(), labels={"app": "web"}, affinity=pod_affinity([term("zone", in_("app", "db"))])
)
AVOIDS_WEB = make_pod(
    fresh(), labels={"app": "x"}, affinity=pod_affinity(anti=[term("host", in_("app", "web"))])
)


def bound(labels: dict[str, str], node_name: str | None = "n1") -> Pod:
    return make_pod(fresh(), labels=labels, node_name=node_name)


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        (WANTS_DB, None, bound({"app": "db"}), QueueingHint.Queue),
        (WANTS_DB, None, bound({"app": "web"}), QueueingHint.QueueSkip),
        (WANTS_DB, None, bound({"app": "db"}, None), QueueingHint.QueueSkip),
        (WANTS_DB, bound({"app": "web"}), bound({"app": "db"}), QueueingHint.Queue),
        (WANTS_DB, bound({"app": "db"}), bound({"app": "db", "x": "y"}), QueueingHint.QueueSkip),
        (AVOIDS_WEB, bound({"app": "web"}), bound({"app": "db"}), QueueingHint.Queue),
        (AVOIDS_WEB, bound({"app": "db"}), bound({"app": "web"}), QueueingHint.QueueSkip),
        (AVOIDS_WEB, bound({"app": "web"}), None, QueueingHint.Queue),
        (AVOIDS_WEB, bound({"app": "db"}), None, QueueingHint.QueueSkip),
        (WANTS_DB, None, "not a pod", QueueingHint.Queue),
    ],
)
def test_pod_change_hint(target, old, new, want):
    assert after_pod_change(target, old, new) is want


@pytest.mark.parametrize(
    ("target", "labels", "want"),
    [
        (WANTS_DB, {"zone": "z1"}, QueueingHint.Queue),
        (WANTS_DB, {"host": "n1"}, QueueingHint.QueueSkip),
        (AVOIDS_WEB, {"host": "n1"}, QueueingHint.Queue),
        (
            make_pod(fresh(), affinity=pod_affinity(anti=[term("rack", exists("a"))])),
            {"zone": "z"},
            QueueingHint.QueueSkip,
        ),
    ],
)
def test_node_change_hint(target, labels, want):
    assert after_node_change(target, None, make_node("n1", labels=labels)) is want


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ([0, 0, 0], [0, 0, 0]),
        ([5, 5], [0, 0]),
        ([-5, -5], [0, 0]),
        ([0, 1, 3], [0, 33, 100]),
        ([-10, -5, 0], [0, 50, 100]),
        ([-7, 0, 7], [0, 50, 100]),
        ([-3, 2, 4], [0, 71, 100]),
        ([1, 2, 3, 4, 5, 6, 7], [0, 16, 33, 50, 66, 83, 100]),
        ([], []),
    ],
)
def test_normalize_score(raw, want):
    assert normalize(np.asarray(raw, dtype=np.int64)).tolist() == want


def test_normalize_score_matches_go_float_math():
    rng = np.random.default_rng(1)
    scores = rng.integers(-1000, 1000, size=200)
    low, high = int(scores.min()), int(scores.max())
    want = [int(100.0 * (float(s - low) / float(high - low))) for s in scores.tolist()]
    assert normalize(scores.astype(np.int64)).tolist() == want
