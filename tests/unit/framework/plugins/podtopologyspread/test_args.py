"""PodTopologySpreadArgs: v1 defaults and ValidatePodTopologySpreadArgs' errors."""

from __future__ import annotations

import pytest

from services.framework.api.registry import ConfigError
from services.framework.plugins.podtopologyspread import ENTRY, PodTopologySpreadArgs
from services.framework.plugins.podtopologyspread.common import SYSTEM_DEFAULT_CONSTRAINTS

PATH = "profiles[0].pluginConfig[0].args"


def decode(raw):
    return ENTRY.decode_args(raw, PATH)


def test_defaults_to_system_defaulting():
    args = decode(None)
    assert args == PodTopologySpreadArgs(defaulting_type="System")
    assert args.constraints() == SYSTEM_DEFAULT_CONSTRAINTS
    assert [(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in args.constraints()] == [
        ("kubernetes.io/hostname", 3, "ScheduleAnyway"),
        ("topology.kubernetes.io/zone", 5, "ScheduleAnyway"),
    ]


def test_list_defaulting_with_constraints():
    args = decode(
        {
            "kind": "PodTopologySpreadArgs",
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"},
            ],
        }
    )
    assert [(c.topology_key, c.max_skew) for c in args.constraints()] == [("zone", 1), ("node", 2)]


def test_list_defaulting_without_constraints_means_none():
    assert decode({"defaultingType": "List"}).constraints() == ()


def constraint(**changes):
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **changes}


def at(suffix):
    return f"{PATH}.{suffix}"


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        pytest.param(
            {"defaultingType": "Magic"},
            at("defaultingType"),
            'Unsupported value: "Magic": supported values: "System", "List"',
            id="unknown defaultingType",
        ),
        pytest.param(
            {"defaultConstraints": [constraint()]},
            at("defaultingType"),
            'Invalid value: "System": when .defaultConstraints are not empty',
            id="System (the default) with constraints",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [constraint(maxSkew=0)]},
            at("defaultConstraints[0].maxSkew"),
            "Invalid value: 0: not in valid range (0, inf)",
            id="maxSkew must be positive",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            at("defaultConstraints[0].maxSkew"),
            "Invalid value: 0: not in valid range (0, inf)",
            id="maxSkew missing",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [constraint(topologyKey="")]},
            at("defaultConstraints[0].topologyKey"),
            "Required value: can not be empty",
            id="topologyKey required",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [constraint(topologyKey="-zone")]},
            at("defaultConstraints[0].topologyKey"),
            'Invalid value: "-zone": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            id="topologyKey must be a label name",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [constraint(whenUnsatisfiable="")]},
            at("defaultConstraints[0].whenUnsatisfiable"),
            "Required value: can not be empty",
            id="whenUnsatisfiable required",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [constraint(whenUnsatisfiable="Sometimes")],
            },
            at("defaultConstraints[0].whenUnsatisfiable"),
            'Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"',
            id="whenUnsatisfiable values",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [constraint(labelSelector={"matchLabels": {"a": "b"}})],
            },
            at("defaultConstraints[0].labelSelector"),
            "Forbidden: constraint must not define a selector, as they deduced for each pod",
            id="labelSelector must be empty",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [constraint(), constraint(maxSkew=3)],
            },
            at("defaultConstraints[1]"),
            'Duplicate value: "{zone, DoNotSchedule}"',
            id="no duplicate topologyKey and whenUnsatisfiable",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [constraint(maxSkw=3)]},
            at("defaultConstraints[0].maxSkw"),
            "unknown field",
            id="strict decoding",
        ),
    ],
)
def test_validation(raw, field, reason):
    with pytest.raises(ConfigError) as caught:
        decode(raw)
    assert (caught.value.field, caught.value.reason) == (field, reason)


def test_same_key_with_both_actions_is_fine():
    args = decode(
        {
            "defaultingType": "List",
            "defaultConstraints": [constraint(), constraint(whenUnsatisfiable="ScheduleAnyway")],
        }
    )
    assert len(args.constraints()) == 2
