"""An explained pod's binding cycle records each PreBind and Bind plugin's answer and
adds it to the explanation's ``pluginResults``, on the Binding and on the binding
cycle's FailedScheduling Event alike; an unexplained pod's records nothing."""

from __future__ import annotations

import json

import pytest

from services.binder.explained import explaining, explanation_annotations, with_binding_results
from services.common.decisions import EXPLAIN_ANNOTATION, with_explanation
from services.framework.api.interface import CycleState
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo
from services.framework.runtime import binding
from services.framework.runtime.results import results_of
from tests.builders import make_pod

EXPLAINED = '{"filter":{"n1":"passed"},"pluginResults":{"reserve":{"VolumeBinding":"success"}}}'


class _PreBind:
    def __init__(self, name: str, status: Status) -> None:
        self.name, self._status = name, status

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return self._status


def _state(explained: bool) -> CycleState:
    state = CycleState()
    state.explain = explained
    return state


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ([_PreBind("A", SUCCESS), _PreBind("B", SUCCESS)], {"A": "success", "B": "success"}),
        (
            [
                _PreBind("A", Status(Code.Unschedulable, ("no volume", "no zone"))),
                _PreBind("B", SUCCESS),
            ],
            {"A": "no volume, no zone"},  # the first failure ends PreBind
        ),
    ],
    ids=["bound", "rejected"],
)
async def test_prebind_answers_join_the_explanation(
    plugins: list[_PreBind], expected: dict[str, str]
) -> None:
    pod = with_explanation(make_pod("web", uid="u1"), EXPLAINED)
    state = _state(explaining(pod))
    await binding.run_pre_bind_plugins(plugins, state, PodInfo.of(pod), "n1")
    annotations = explanation_annotations(pod, state)
    results = json.loads(annotations[EXPLAIN_ANNOTATION])["pluginResults"]
    assert results == {"reserve": {"VolumeBinding": "success"}, "preBind": expected, "bind": {}}
    bound = with_binding_results(pod, state).metadata.annotations[EXPLAIN_ANNOTATION]
    assert bound == annotations[EXPLAIN_ANNOTATION]


async def test_an_unexplained_pod_records_nothing() -> None:
    pod = make_pod("web", uid="u1")
    state = _state(explaining(pod))
    await binding.run_pre_bind_plugins([_PreBind("A", SUCCESS)], state, PodInfo.of(pod), "n1")
    assert results_of(state) is None
    assert explanation_annotations(pod, state) == {}
    assert with_binding_results(pod, state) is pod
