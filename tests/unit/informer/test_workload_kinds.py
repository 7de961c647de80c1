"""The native gang API at ingest: Workload and PodGroup (scheduling.k8s.io) are refused by
name while GenericWorkload is off, validated as upstream's ``pkg/apis/scheduling/validation``
when it is on; a pod's ``spec.schedulingGroup`` is dropped while the gate is off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from contracts.errors import ErrorReport
from contracts.k8s import Pod, SchedulingPodGroup, Workload
from services.cli.manifests import read_documents
from services.common import features
from services.informer.validate import Accepted, validate


@pytest.fixture
def gate_on() -> Iterator[None]:
    features.install(features.parse("GenericWorkload=true,GangScheduling=true"))
    yield
    features.install(features.DEFAULTS)


def event(obj: dict[str, Any]) -> bytes:
    return msgspec.json.encode({"type": "ADDED", "object": obj})


def workload(templates: list[dict[str, Any]], version: str = "v1beta1") -> dict[str, Any]:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "Workload",
        "metadata": {"name": "training", "namespace": "ml"},
        "spec": {"podGroupTemplates": templates},
    }


def pod_group(policy: dict[str, Any], version: str = "v1beta1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": "workers", "namespace": "ml"},
        "spec": {"schedulingPolicy": policy, **spec},
    }


def member(group: str | None = "workers") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "w-0", "namespace": "ml"},
        "spec": {"containers": [{"name": "c"}], "schedulingGroup": {"podGroupName": group}},
    }


@pytest.mark.parametrize(
    ("kind", "obj", "words"),
    [
        ("workload", workload([]), "Workload needs the GenericWorkload feature gate"),
        (
            "schedulingpodgroup",
            pod_group({"gang": {"minCount": 2}}),
            "PodGroup (scheduling.k8s.io) needs the GenericWorkload feature gate",
        ),
    ],
)
def test_refused_by_name_with_the_gate_off(kind: str, obj: dict[str, Any], words: str) -> None:
    report = validate(event(obj), f"{kind}.added")
    assert isinstance(report, ErrorReport)
    assert report.field == "kind"
    assert words in report.reason
    assert "--feature-gates=GenericWorkload=true" in report.reason


def test_scheduling_group_dropped_with_the_gate_off() -> None:
    accepted = validate(event(member()), "pod.added")
    assert isinstance(accepted, Accepted)
    assert isinstance(accepted.object, Pod)
    assert accepted.object.spec.scheduling_group is None


@pytest.mark.usefixtures("gate_on")
def test_accepted_with_the_gate_on() -> None:
    wl = validate(
        event(workload([{"name": "worker", "schedulingPolicy": {"gang": {"minCount": 4}}}])),
        "workload.added",
    )
    assert isinstance(wl, Accepted)
    assert isinstance(wl.object, Workload)
    template = wl.object.spec.pod_group_templates[0]
    assert template.scheduling_policy.gang is not None
    assert template.scheduling_policy.gang.min_count == 4
    group = validate(
        event(
            pod_group(
                {"gang": {"minCount": 4}},
                workloadRef={"workloadName": "training", "templateName": "worker"},
            )
        ),
        "schedulingpodgroup.added",
    )
    assert isinstance(group, Accepted)
    assert isinstance(group.object, SchedulingPodGroup)
    ref = group.object.workload_reference()
    assert ref is not None and (ref.workload_name, ref.template_name) == ("training", "worker")
    pod = validate(event(member()), "pod.added")
    assert isinstance(pod, Accepted) and isinstance(pod.object, Pod)
    assert pod.object.spec.scheduling_group is not None
    assert pod.object.spec.scheduling_group.pod_group_name == "workers"


@pytest.mark.usefixtures("gate_on")
def test_v1alpha2_template_reference_reads_as_v1beta1() -> None:
    group = validate(
        event(
            pod_group(
                {"basic": {}},
                version="v1alpha2",
                podGroupTemplateRef={
                    "workload": {"workloadName": "training", "podGroupTemplateName": "worker"}
                },
            )
        ),
        "schedulingpodgroup.added",
    )
    assert isinstance(group, Accepted) and isinstance(group.object, SchedulingPodGroup)
    ref = group.object.workload_reference()
    assert ref is not None and (ref.workload_name, ref.template_name) == ("training", "worker")
    assert group.object.scheduled_condition_type() == "PodGroupScheduled"


BAD = [
    # (id, kind, object, field, words)
    (
        "v1alpha1",
        "workload",
        workload([{"name": "w", "schedulingPolicy": {"basic": {}}}], version="v1alpha1"),
        "apiVersion",
        "Unsupported value",
    ),
    ("no-templates", "workload", workload([]), "spec.podGroupTemplates", "Required value"),
    (
        "nine-templates",
        "workload",
        workload([{"name": f"t{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)]),
        "spec.podGroupTemplates",
        "must have at most 8 items",
    ),
    (
        "duplicate-template",
        "workload",
        workload([{"name": "t", "schedulingPolicy": {"basic": {}}}] * 2),
        "spec.podGroupTemplates[1].name",
        'Duplicate value: "t"',
    ),
    (
        "template-name",
        "workload",
        workload([{"name": "Worker", "schedulingPolicy": {"basic": {}}}]),
        "spec.podGroupTemplates[0].name",
        "RFC 1123 label",
    ),
    (
        "no-policy",
        "schedulingpodgroup",
        pod_group({}),
        "spec.schedulingPolicy",
        "must specify one of: `basic`, `gang`",
    ),
    (
        "two-policies",
        "schedulingpodgroup",
        pod_group({"basic": {}, "gang": {"minCount": 1}}),
        "spec.schedulingPolicy",
        "must specify exactly one of: `basic`, `gang`",
    ),
    (
        "min-count",
        "schedulingpodgroup",
        pod_group({"gang": {"minCount": 0}}),
        "spec.schedulingPolicy.gang.minCount",
        "Invalid value: 0: must be greater than or equal to 1",
    ),
    (
        "template-ref",
        "schedulingpodgroup",
        pod_group({"basic": {}}, workloadRef={"workloadName": "training"}),
        "spec.workloadRef.templateName",
        "Required value",
    ),
    (
        "pod-group-name",
        "pod",
        member(None),
        "spec.schedulingGroup.podGroupName",
        "Required value",
    ),
]


@pytest.mark.usefixtures("gate_on")
@pytest.mark.parametrize(
    ("kind", "obj", "field", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_refused_as_upstream(kind: str, obj: dict[str, Any], field: str, words: str) -> None:
    report = validate(event(obj), f"{kind}.added")
    assert isinstance(report, ErrorReport), report
    assert report.field == field
    assert words in report.reason


@pytest.mark.usefixtures("gate_on")
def test_manifest_picks_the_podgroup_by_api_group() -> None:
    text = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: native, namespace: ml}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: plugins, namespace: ml}
spec: {minMember: 2}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: training, namespace: ml}
spec: {podGroupTemplates: [{name: worker, schedulingPolicy: {gang: {minCount: 2}}}]}
"""
    kinds = [d.kind for d in read_documents(text, warn=lambda _line: None)]
    assert kinds == ["schedulingpodgroup", "podgroup", "workload"]
