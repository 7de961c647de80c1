"""``features.parse``: kube-scheduler's ``--feature-gates`` syntax and component-base's
error messages; the gates mapped to settings."""

from __future__ import annotations

import pytest

from services.common import features


def test_parse_reads_name_value_pairs_with_go_booleans() -> None:
    gates = features.parse(" SchedulerPopFromBackoffQ=false, OpportunisticBatching=T,")
    assert gates.overrides == {"SchedulerPopFromBackoffQ": False, "OpportunisticBatching": True}
    assert not gates.enabled("SchedulerPopFromBackoffQ")
    assert gates.enabled("SchedulerPreEnqueuePodStatus")  # its default
    assert features.parse("").overrides == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Foo=true", "unrecognized feature gate: Foo"),
        ("SchedulerPopFromBackoffQ", "missing bool value for SchedulerPopFromBackoffQ"),
        (
            "SchedulerPopFromBackoffQ=on",
            'invalid value of SchedulerPopFromBackoffQ=on, err: strconv.ParseBool: parsing "on": '
            "invalid syntax",
        ),
        (
            "DynamicResourceAllocation=false",
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
        ),
        ("CompositePodGroup=true", "feature gate CompositePodGroup: not implemented in ksched"),
    ],
)
def test_parse_errors_are_upstreams(text: str, message: str) -> None:
    with pytest.raises(features.FeatureGateError) as raised:
        features.parse(text)
    assert str(raised.value) == message


def test_locked_and_unimplemented_gates_may_be_set_to_their_default() -> None:
    gates = features.parse("DynamicResourceAllocation=true,GenericWorkload=false")
    assert gates.enabled("DynamicResourceAllocation") and not gates.enabled("GenericWorkload")


def test_only_explicit_gates_set_settings() -> None:
    assert features.setting_overrides(features.DEFAULTS) == {}
    gates = features.parse("SchedulerPreEnqueuePodStatus=false,OpportunisticBatching=false")
    assert features.setting_overrides(gates) == {"pre_enqueue_pod_status": False}
