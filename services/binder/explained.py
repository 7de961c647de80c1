"""What the binding cycle adds to an explained pod's explanation: each PreBind and Bind
plugin's answer (framework.runtime.results), into its ``pluginResults``, so the Binding
(or the binding cycle's FailedScheduling Event) carries the whole attempt as
kube-scheduler-simulator records it."""

from __future__ import annotations

import msgspec

from contracts.k8s import Pod
from services.common.decisions import EXPLAIN_ANNOTATION, with_explanation
from services.framework.api.interface import CycleState
from services.framework.runtime.results import results_of


def explaining(pod: Pod) -> bool:
    """Whether the scheduler explained the pod's attempt (its annotation holds JSON):
    the binding cycle then records its plugins' answers too."""
    return pod.metadata.annotations.get(EXPLAIN_ANNOTATION, "").startswith("{")


def with_binding_results(pod: Pod, state: CycleState) -> Pod:
    """``pod`` with its explanation's ``pluginResults`` extended by what ``state``
    recorded at PreBind and Bind; unchanged when nothing was recorded."""
    recorded = results_of(state)
    if recorded is None or not explaining(pod):
        return pod
    explanation = msgspec.json.decode(pod.metadata.annotations[EXPLAIN_ANNOTATION])
    if not isinstance(explanation, dict):
        return pod
    explanation.setdefault("pluginResults", {}).update(recorded.binding_json())
    return with_explanation(pod, msgspec.json.encode(explanation).decode())


def explanation_annotations(pod: Pod, state: CycleState) -> dict[str, str]:
    """The annotations a FailedScheduling Event of the binding cycle carries: the
    explanation with the binding cycle's answers, when the attempt was explained."""
    if not explaining(pod):
        return {}
    return {
        EXPLAIN_ANNOTATION: with_binding_results(pod, state).metadata.annotations[
            EXPLAIN_ANNOTATION
        ]
    }
