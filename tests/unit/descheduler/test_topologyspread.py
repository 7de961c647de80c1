"""Upstream's TestTopologySpreadConstraint (removepodsviolatingtopologyspreadconstraint/
topologyspreadconstraint_test.go), case by case. As upstream's test does, the pods are
listed in name order so that the pods expected by name are the ones chosen."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import Node, Pod
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.topologyspread import (
    RemovePodsViolatingTopologySpreadConstraintArgs as Args,
)
from services.descheduler.plugins.topologyspread import new
from tests.unit.descheduler.support import evicted_names, run_plugin
from tests.unit.descheduler.topologyspread_cases import CASES


@pytest.mark.parametrize(
    ("nodes", "pods", "count", "names", "extra"), CASES.values(), ids=CASES.keys()
)
def test_topology_spread(
    nodes: list[Node], pods: list[Pod], count: int, names: list[str] | None, extra: dict[str, Any]
) -> None:
    pods = sorted(pods, key=lambda p: p.metadata.name)
    evictor = run_plugin(
        new,
        extra.get("args", Args()).defaulted(),
        nodes,
        pods,
        evictor_args=DefaultEvictorArgs(node_fit=extra.get("fit", False)),
        balance=True,
    )
    assert evictor.total_evicted == count
    if names is not None:
        assert sorted(evicted_names(evictor)) == sorted(names)


def test_defaults() -> None:
    args = Args().defaulted()
    assert (args.constraints, args.topology_balance_node_fit) == (["DoNotSchedule"], True)
