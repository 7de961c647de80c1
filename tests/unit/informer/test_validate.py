"""Bad input gets a report naming the object and the field; good input is accepted."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.errors import ErrorReport
from contracts.k8s import Pod
from services.informer.validate import MAX_MESSAGE_BYTES, Accepted, default_uid, validate


def event(obj: dict[str, Any], type_: str = "ADDED") -> bytes:
    return msgspec.json.encode({"type": type_, "object": obj})


def pod_obj(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"containers": [{"name": "c"}], **spec},
    }


def with_requests(**requests: Any) -> dict[str, Any]:
    return pod_obj(containers=[{"name": "c", "resources": {"requests": requests}}])


BAD = [
    # (id, body, routing key, kind, name, field, words in the reason)
    ("malformed-json", b'{"type": "ADDED", "object": {', "pod.added", "pod", None, "", "malformed"),
    ("not-an-event", b"[1, 2]", "pod.added", "pod", None, "", "malformed"),
    (
        "unknown-kind",
        event(pod_obj()),
        "deployment.added",
        "deployment",
        "web",
        "kind",
        "unknown kind",
    ),
    (
        "missing-name",
        event({"kind": "Pod", "metadata": {}}),
        "pod.added",
        "pod",
        None,
        "metadata.name",
        "required",
    ),
    (
        "bad-cpu",
        event(with_requests(cpu="12x")),
        "pod.added",
        "pod",
        "web",
        "spec.containers[0].resources.requests.cpu",
        "12x",
    ),
    (
        "negative-memory",
        event(with_requests(memory="-1Gi")),
        "pod.added",
        "pod",
        "web",
        "spec.containers[0].resources.requests.memory",
        "greater than or equal to 0",
    ),
    (
        "wrong-type",
        event(pod_obj(priority="high")),
        "pod.added",
        "pod",
        "web",
        "spec.priority",
        "int",
    ),
    (
        "unsupported-preemption-policy",
        event(pod_obj(preemptionPolicy="Sometimes")),
        "pod.added",
        "pod",
        "web",
        "spec.preemptionPolicy",
        'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
    ),
    (
        "empty-preemption-policy",
        event(pod_obj(preemptionPolicy="")),
        "pod.added",
        "pod",
        "web",
        "spec.preemptionPolicy",
        "Required value",
    ),
    (
        "priority-class-preemption-policy",
        event(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "batch"},
                "value": 100,
                "preemptionPolicy": "never",
            }
        ),
        "priorityclass.added",
        "priorityclass",
        "batch",
        "preemptionPolicy",
        'Unsupported value: "never"',
    ),
    ("type-mismatch", event(pod_obj(), "ADDED"), "pod.deleted", "pod", "web", "type", "deleted"),
    (
        "bad-event-type",
        event(pod_obj(), "BOOKMARK"),
        "pod.bookmark",
        "pod",
        "web",
        "type",
        "BOOKMARK",
    ),
    (
        "wrong-kind-field",
        event({**pod_obj(), "kind": "Node"}),
        "pod.added",
        "pod",
        "web",
        "kind",
        "Node",
    ),
    (
        "bad-allocatable",
        event(
            {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "four"}}}
        ),
        "node.added",
        "node",
        "n1",
        "status.allocatable.cpu",
        "four",
    ),
]


@pytest.mark.parametrize(
    ("body", "key", "kind", "name", "field", "words"),
    [case[1:] for case in BAD],
    ids=[case[0] for case in BAD],
)
def test_bad_input_names_object_and_field(
    body: bytes, key: str, kind: str, name: str | None, field: str, words: str
) -> None:
    report = validate(body, key)
    assert isinstance(report, ErrorReport)
    assert report.object_kind == kind
    assert report.name == name
    assert report.field == field
    assert words.lower() in report.reason.lower()
    assert report.routing_key == key


@pytest.mark.parametrize("policy", ["PreemptLowerPriority", "Never", None])
def test_supported_preemption_policies_are_accepted(policy: str | None) -> None:
    spec = {} if policy is None else {"preemptionPolicy": policy}
    accepted = validate(event(pod_obj(**spec)), "pod.added")
    assert isinstance(accepted, Accepted)
    assert isinstance(accepted.object, Pod)
    assert accepted.object.spec.preemption_policy == policy


def test_oversized_message_is_refused() -> None:
    obj = pod_obj()
    obj["metadata"]["annotations"] = {"blob": "x" * MAX_MESSAGE_BYTES}
    report = validate(event(obj), "pod.added")
    assert isinstance(report, ErrorReport)
    assert report.name == "web" and "exceeds" in report.reason


def test_kubectl_output_is_accepted_with_unknown_fields_ignored() -> None:
    obj = pod_obj()
    obj["metadata"].update(uid="1234", resourceVersion="77", managedFields=[{"manager": "kubectl"}])
    obj["spec"]["dnsPolicy"] = "ClusterFirst"
    obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    accepted = validate(event(obj), "pod.added")
    assert isinstance(accepted, Accepted)
    assert isinstance(accepted.object, Pod)
    assert accepted.object.metadata.uid == "1234"
    assert accepted.key == "shop/web"


def test_missing_uid_and_namespace_get_stable_defaults() -> None:
    obj = pod_obj()
    del obj["metadata"]["namespace"]
    first = validate(event(obj), "pod.added")
    second = validate(event(obj, "MODIFIED"), "pod.modified")
    assert isinstance(first, Accepted) and isinstance(second, Accepted)
    assert first.object.metadata.namespace == "default"
    assert first.object.metadata.uid == second.object.metadata.uid
    assert first.object.metadata.uid == default_uid("pod", first.object.metadata)


def test_deleted_event_skips_quantity_checks() -> None:
    accepted = validate(event(with_requests(cpu="12x"), "DELETED"), "pod.deleted")
    assert isinstance(accepted, Accepted) and accepted.type == "DELETED"
