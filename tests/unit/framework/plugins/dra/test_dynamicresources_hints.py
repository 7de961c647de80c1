"""DynamicResources' events and queueing hints (upstream's TestIsSchedulableAfter*
cases where they apply) and its args (``DynamicResourcesArgs``)."""

from __future__ import annotations

import msgspec
import pytest

from services.common import features
from services.framework.api.events import ActionType, ClusterEvent, EventResource, QueueingHint
from services.framework.api.registry import ConfigError
from services.framework.api.types import PodInfo
from services.framework.config.load import load_config
from services.framework.plugins.dynamicresources import DynamicResources, DynamicResourcesArgs
from tests.builders import make_pod
from tests.unit.framework.plugins.dra.plugin_support import (
    ALLOCATION,
    POD_UID,
    allocated,
    claim,
    listers_of,
    pod_with_claim_name,
    pod_with_claim_template,
)

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
PENDING = claim(owner=POD_UID)
OTHER = claim("not-my-claim")


def plugin_of(*objects: object) -> DynamicResources:
    args = DynamicResourcesArgs().defaulted()
    return DynamicResources(args, listers_of(*objects))


def test_events_are_upstreams():
    events = {e.event: e.queueing_hint is not None for e in plugin_of().events_to_register()}
    add_update = ActionType.Add | ActionType.Update
    node = (
        ActionType.Add
        | ActionType.UpdateNodeLabel
        | ActionType.UpdateNodeTaint
        | ActionType.UpdateNodeAllocatable
    )
    assert events == {
        ClusterEvent(EventResource.Node, node): False,
        ClusterEvent(EventResource.ResourceClaim, add_update): True,
        ClusterEvent(EventResource.Pod, ActionType.UpdatePodGeneratedResourceClaim): True,
        ClusterEvent(EventResource.DeviceClass, add_update): False,
        ClusterEvent(EventResource.ResourceSlice, add_update): False,
    }


def with_finalizer(c):  # type: ignore[no-untyped-def]
    return msgspec.structs.replace(
        c, metadata=msgspec.structs.replace(c.metadata, finalizers=["foo"])
    )


NAMED = pod_with_claim_name()
TEMPLATE = pod_with_claim_template(in_status=False)
IN_STATUS = pod_with_claim_template(in_status=True)
WRONG_OWNER = claim(owner=POD_UID + "123", allocation=ALLOCATION)
UNRELATED = msgspec.structs.replace(
    allocated(PENDING),
    metadata=msgspec.structs.replace(
        PENDING.metadata, name=PENDING.metadata.name + "-foo", uid="u123"
    ),
)


@pytest.mark.parametrize(
    ("pod", "listed", "old", "new", "hint"),
    [
        pytest.param(TEMPLATE, (), allocated(PENDING), None, SKIP, id="skip-deletes"),
        pytest.param(TEMPLATE, (), None, "not-a-claim", Q, id="backoff-wrong-new-object"),
        pytest.param(TEMPLATE, (), None, WRONG_OWNER, SKIP, id="skip-wrong-claim"),
        pytest.param(
            IN_STATUS, (allocated(PENDING),), None, UNRELATED, SKIP, id="skip-unrelated-claim"
        ),
        pytest.param(NAMED, (), None, PENDING, Q, id="queue-on-add"),
        pytest.param(NAMED, (PENDING,), "not-a-claim", PENDING, Q, id="backoff-wrong-old-object"),
        pytest.param(
            NAMED, (PENDING,), PENDING, with_finalizer(PENDING), SKIP, id="skip-adding-finalizer"
        ),
        pytest.param(
            NAMED, (PENDING,), PENDING, allocated(PENDING), Q, id="queue-on-status-change"
        ),
        pytest.param(
            NAMED,
            (PENDING, allocated(OTHER)),
            allocated(OTHER),
            OTHER,
            Q,
            id="claim-deallocate",
        ),
        pytest.param(NAMED, (PENDING, OTHER), None, OTHER, SKIP, id="skip-other-claim-added"),
    ],
)
def test_is_schedulable_after_claim_change(pod, listed, old, new, hint):
    # The queue asks before its listers take the change: the hint sees ``new`` itself.
    plugin = plugin_of(*listed)
    assert plugin.is_schedulable_after_claim_change(pod, old, new) == hint


def test_a_pod_missing_a_claim_skips_every_claim_change():
    plugin = plugin_of(OTHER)
    pod = pod_with_claim_name()
    assert plugin.is_schedulable_after_claim_change(pod, allocated(OTHER), OTHER) == SKIP


@pytest.mark.parametrize(
    ("listed", "new", "hint"),
    [
        pytest.param((PENDING,), make_pod("other", uid="other-uid"), SKIP, id="skip-other-pod"),
        pytest.param(
            (PENDING,), pod_with_claim_template(in_status=False), SKIP, id="skip-no-status"
        ),
        pytest.param((), pod_with_claim_template(in_status=True), SKIP, id="skip-claim-missing"),
        pytest.param(
            (PENDING,), pod_with_claim_template(in_status=True), Q, id="queue-claim-named"
        ),
    ],
)
def test_is_schedulable_after_pod_change(listed, new, hint):
    plugin = plugin_of(*listed)
    old = pod_with_claim_template(in_status=False)
    assert plugin.is_schedulable_after_pod_change(old, old, new) == hint


def test_a_template_entry_without_a_generated_claim_is_ignored():
    pod = pod_with_claim_template(in_status=True, claim_name=None)
    assert plugin_of().pre_enqueue(PodInfo.of(pod)).is_success()


# -- args -----------------------------------------------------------------------------

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def args_config(args: str) -> str:
    return HEAD + f"profiles:\n- pluginConfig:\n  - name: DynamicResources\n    args: {args}\n"


def test_args_default_to_upstreams():
    args = DynamicResourcesArgs().defaulted()
    assert (args.filter_timeout, args.binding_timeout) == ("10s", "600s")
    assert (args.filter_timeout_seconds, args.binding_timeout_seconds) == (10.0, 600.0)


def test_args_load_from_the_configuration(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(args_config("{filterTimeout: 2.5s, bindingTimeout: 1m}"))
    (profile,) = load_config(path).profiles
    args = profile.plugin_args["DynamicResources"]
    assert args == DynamicResourcesArgs(filter_timeout="2.5s", binding_timeout="1m")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(
            "{filterTimeout: -1s}",
            "profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: -1s: "
            "must be zero or positive",
            id="negative filterTimeout",
        ),
        pytest.param(
            "{bindingTimeout: 500ms}",
            "profiles[0].pluginConfig[0].args.bindingTimeout: Invalid value: 500ms: "
            "must be at least 1 second",
            id="bindingTimeout under a second",
        ),
        pytest.param(
            "{filterTimeout: soon}",
            'profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: "soon": '
            'time: invalid duration "soon"',
            id="not a duration",
        ),
        pytest.param(
            "{timeout: 5s}",
            "profiles[0].pluginConfig[0].args.timeout: unknown field",
            id="unknown field",
        ),
    ],
)
def test_bad_args_are_config_errors(args, error):
    with pytest.raises(ConfigError) as caught:
        load_config(msgspec.yaml.decode(args_config(args)))
    assert str(caught.value) == error


def test_filter_timeout_is_forbidden_with_its_gate_off(monkeypatch):
    monkeypatch.setattr(
        features, "_current", features.FeatureGates({"DRASchedulerFilterTimeout": False})
    )
    assert DynamicResourcesArgs().defaulted().filter_timeout is None
    with pytest.raises(ConfigError) as caught:
        DynamicResourcesArgs(filter_timeout="5s").validate("args")
    assert str(caught.value) == (
        "args.filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled"
    )
