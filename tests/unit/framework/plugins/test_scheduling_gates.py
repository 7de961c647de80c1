"""SchedulingGates, from upstream's scheduling_gates_test.go."""

from __future__ import annotations

import pytest

from services.framework.api.events import QueueingHint
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.schedulinggates import SchedulingGates, after_gates_eliminated
from tests.builders import make_pod


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param((), Status(), id="pod does not carry scheduling gates"),
        pytest.param(
            ("foo", "bar"),
            Status(
                Code.UnschedulableAndUnresolvable,
                ("Scheduling is blocked due to non-empty scheduling gates",),
            ),
            id="pod carries scheduling gates",
        ),
    ],
)
def test_pre_enqueue(gates, expected):
    pod = PodInfo.of(make_pod(scheduling_gates=gates))
    assert SchedulingGates().pre_enqueue(pod) == expected


def test_requeued_only_by_its_own_update():
    gated = make_pod("p", scheduling_gates=("foo",))
    assert after_gates_eliminated(gated, gated, make_pod("p")) == QueueingHint.Queue
    assert after_gates_eliminated(gated, None, make_pod("q")) == QueueingHint.QueueSkip
