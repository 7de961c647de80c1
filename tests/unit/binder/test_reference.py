"""A BindRequest names its pod by reference; the Binding and the ``Scheduled`` Event the
binder builds from it are byte for byte those it built from the whole Pod."""

from __future__ import annotations

import msgspec
import pytest

from contracts.k8s import Pod
from contracts.messages import BindRequest
from services.binder.service import pod_reference
from services.common.decisions import (
    EXPLAIN_ANNOTATION,
    binding_for,
    pod_event,
    with_explanation,
)
from tests.builders import make_pod


def _with(
    pod: Pod, *, namespace: str | None, version: str | None, annotations: dict[str, str]
) -> Pod:
    meta = msgspec.structs.replace(
        pod.metadata, namespace=namespace, resource_version=version, annotations=annotations
    )
    return msgspec.structs.replace(pod, metadata=meta)


def _request(pod: Pod, explanation: str) -> BindRequest:
    """What the scheduler sends for ``pod`` (services.scheduler.cycle)."""
    meta = pod.metadata
    return BindRequest(
        uid=meta.uid or "",
        namespace=meta.namespace,
        name=meta.name,
        resource_version=meta.resource_version,
        explanation=explanation or meta.annotations.get(EXPLAIN_ANNOTATION, ""),
        node="n1",
        attempt=3,
        profile=pod.spec.scheduler_name,
    )


@pytest.mark.parametrize(
    ("namespace", "version", "annotations", "explanation"),
    [
        ("default", "42", {}, ""),
        (None, None, {"team": "a"}, ""),
        ("prod", "7", {EXPLAIN_ANNOTATION: "true"}, '{"filter": {}}'),
        ("prod", "7", {EXPLAIN_ANNOTATION: '{"by": "user"}'}, ""),
        ("prod", "7", {EXPLAIN_ANNOTATION: "not json"}, ""),
    ],
    ids=["plain", "no-namespace", "explained", "user-json-annotation", "user-text-annotation"],
)
@pytest.mark.parametrize("scheduler", ["default-scheduler", "second"])
def test_binding_and_event_match_those_of_the_whole_pod(
    namespace: str | None,
    version: str | None,
    annotations: dict[str, str],
    explanation: str,
    scheduler: str,
) -> None:
    pod = _with(
        make_pod("web", scheduler_name=scheduler),
        namespace=namespace,
        version=version,
        annotations=annotations,
    )
    whole = with_explanation(pod, explanation) if explanation else pod
    reference = pod_reference(_request(pod, explanation))
    encode = msgspec.json.encode
    assert encode(binding_for(reference, "n1")) == encode(binding_for(whole, "n1"))
    kwargs = {
        "reason": "Scheduled",
        "message": "Successfully assigned",
        "warning": False,
        "action": "Binding",
        "attempt": 3,
        "now": 1700000000.0,
    }
    assert encode(pod_event(reference, **kwargs)) == encode(pod_event(whole, **kwargs))
    assert msgspec.json.decode(encode(_request(pod, explanation)), type=BindRequest) == _request(
        pod, explanation
    )
