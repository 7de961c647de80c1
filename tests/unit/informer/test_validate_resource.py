"""resource.k8s.io objects and a pod's claims: what upstream's validation refuses is
refused with its message, naming the object and the field; valid objects pass."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from contracts.errors import ErrorReport
from services.informer.validate import Accepted, validate

Obj = dict[str, Any]


def event(obj: Obj, type_: str = "ADDED") -> bytes:
    return msgspec.json.encode({"type": type_, "object": obj})


def claim_spec() -> Obj:
    return {
        "devices": {
            "requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
                {
                    "name": "any",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "big.example.com"},
                        {"name": "small", "deviceClassName": "small.example.com", "count": 2},
                    ],
                },
            ],
            "constraints": [{"requests": ["gpu", "any/big"], "matchAttribute": "example.com/numa"}],
            "config": [
                {"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {}}}
            ],
        }
    }


def claim() -> Obj:
    return {
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ml"},
        "spec": claim_spec(),
    }


def template() -> Obj:
    return {
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ml"},
        "spec": {"metadata": {"labels": {"team": "a"}}, "spec": claim_spec()},
    }


def resource_slice() -> Obj:
    return {
        "kind": "ResourceSlice",
        "metadata": {"name": "node-1-gpu"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {
                        "model": {"string": "a100"},
                        "example.com/numa": {"int": 0},
                        "driverVersion": {"version": "1.2.3-rc.1"},
                    },
                    "capacity": {"memory": {"value": "40Gi"}},
                }
            ],
        },
    }


def shared_slice() -> Obj:
    """A slice whose GPU allows multiple allocations, its bandwidth shared by range."""
    obj = resource_slice()
    device = obj["spec"]["devices"][0]
    device["allowMultipleAllocations"] = True
    device["capacity"]["bandwidth"] = {
        "value": "10",
        "requestPolicy": {"default": "2", "validRange": {"min": "2", "max": "8", "step": "2"}},
    }
    return obj


def device_class() -> Obj:
    return {
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {
            "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
            "extendedResourceName": "example.com/gpu",
        },
    }


def pod(**spec: Any) -> Obj:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {
            "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
            **spec,
        },
    }


VALID: dict[str, tuple[str, Callable[[], Obj]]] = {
    "claim": ("resourceclaim", claim),
    "template": ("resourceclaimtemplate", template),
    "slice": ("resourceslice", resource_slice),
    "shared-slice": ("resourceslice", shared_slice),
    "class": ("deviceclass", device_class),
    "pod": ("pod", pod),
}


@pytest.mark.parametrize("case", list(VALID))
def test_valid_objects_are_accepted(case: str) -> None:
    kind, make = VALID[case]
    assert isinstance(validate(event(make()), f"{kind}.added"), Accepted)


BW = "spec.devices[0].capacity[bandwidth].requestPolicy"
BW_AT = "spec.devices.0.capacity.bandwidth.requestPolicy"
"""The shared slice's bandwidth policy: as a field in messages, as a path to change."""


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        *parents, leaf = path.split(".")
        where: Any = obj
        for part in parents:
            where = where[int(part)] if part.isdigit() else where[part]
        if value is _DELETE:
            del where[int(leaf) if leaf.isdigit() else leaf]
        else:
            where[int(leaf) if leaf.isdigit() else leaf] = value

    return change


_DELETE = object()
REQ = "spec.devices.requests"

BAD: list[tuple[str, str, Callable[[Obj], None], str, str]] = [
    # (id, case, change, field, reason)
    (
        "claim-name",
        "claim",
        _set("metadata.name", "Bad_Name"),
        "metadata.name",
        "Invalid value: 'Bad_Name': a lowercase RFC 1123 subdomain",
    ),
    ("request-neither", "claim", _set(f"{REQ}.0.exactly", _DELETE), f"{REQ}[0]",
     "Required value: exactly one of `exactly` or `firstAvailable` is required"),
    (
        "request-both",
        "claim",
        _set(f"{REQ}.1.exactly", {"deviceClassName": "x"}),
        f"{REQ}[1]",
        "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
        "but multiple fields are set",
    ),
    ("request-dup", "claim", _set(f"{REQ}.1.name", "gpu"), f"{REQ}[1]", "Duplicate value: 'gpu'"),
    ("request-name", "claim", _set(f"{REQ}.0.name", "GPU"), f"{REQ}[0].name",
     "Invalid value: 'GPU': a lowercase RFC 1123 label"),
    ("class-required", "claim", _set(f"{REQ}.0.exactly.deviceClassName", ""),
     f"{REQ}[0].exactly.deviceClassName", "Required value"),
    ("mode", "claim", _set(f"{REQ}.0.exactly.allocationMode", "Some"),
     f"{REQ}[0].exactly.allocationMode",
     'Unsupported value: "Some": supported values: "All", "ExactCount"'),
    ("count-all", "claim",
     _set(f"{REQ}.0.exactly", {"deviceClassName": "x", "allocationMode": "All", "count": 2}),
     f"{REQ}[0].exactly.count",
     "Invalid value: 2: must not be specified when allocationMode is 'All'"),
    ("count-negative", "claim", _set(f"{REQ}.1.firstAvailable.1.count", -1),
     f"{REQ}[1].firstAvailable[1].count", "Invalid value: -1: must be greater than zero"),
    ("subrequest-dup", "claim", _set(f"{REQ}.1.firstAvailable.1.name", "big"),
     f"{REQ}[1].firstAvailable[1]", "Duplicate value: 'big'"),
    ("too-many-requests", "claim",
     _set(REQ, [{"name": f"r{i}", "exactly": {"deviceClassName": "x"}} for i in range(33)]),
     REQ, "Too many: 33: must have at most 32 items"),
    ("constraint-ref", "claim", _set("spec.devices.constraints.0.requests", ["tpu"]),
     "spec.devices.constraints[0].requests[0]",
     "Invalid value: 'tpu': must be the name of a request in the claim or the name of a "
     "request and a subrequest separated by '/'"),
    ("constraint-subref", "claim", _set("spec.devices.constraints.0.requests", ["any/huge"]),
     "spec.devices.constraints[0].requests[0]", "Invalid value: 'any/huge'"),
    ("constraint-attribute", "claim", _set("spec.devices.constraints.0.matchAttribute", "numa"),
     "spec.devices.constraints[0].matchAttribute",
     "Invalid value: 'numa': a fully qualified name must be a domain and a name separated "
     "by a slash"),
    ("constraint-none", "claim", _set("spec.devices.constraints.0.matchAttribute", _DELETE),
     "spec.devices.constraints[0]", "Required value: exactly one of \"matchAttribute\""),
    ("config-opaque", "claim", _set("spec.devices.config.0.opaque", _DELETE),
     "spec.devices.config[0].opaque", "Required value"),
    ("selector-empty", "claim", _set(f"{REQ}.0.exactly.selectors", [{}]),
     f"{REQ}[0].exactly.selectors[0].cel", "Required value"),
    ("reserved-unallocated", "claim",
     _set("status", {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}),
     "status.reservedFor", "Forbidden: may not be specified when `allocated` is not set"),
    ("template-request", "template", _set("spec.spec.devices.requests.0.exactly", _DELETE),
     "spec.spec.devices.requests[0]", "Required value"),
    ("template-label", "template", _set("spec.metadata.labels", {"a b": "c"}),
     "spec.metadata.labels", "Invalid value: 'a b'"),
    ("slice-driver", "slice", _set("spec.driver", "GPU_driver"), "spec.driver",
     "Invalid value: 'GPU_driver': a lowercase RFC 1123 subdomain"),
    ("slice-count", "slice", _set("spec.pool.resourceSliceCount", 0),
     "spec.pool.resourceSliceCount", "Invalid value: 0: must be greater than zero"),
    ("slice-generation", "slice", _set("spec.pool.generation", -1), "spec.pool.generation",
     "Invalid value: -1: must be greater than or equal to zero"),
    ("slice-pool-name", "slice", _set("spec.pool.name", ""), "spec.pool.name", "Required value"),
    ("slice-no-node", "slice", _set("spec.nodeName", _DELETE), "spec",
     "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
     "`perDeviceNodeSelection` is required"),
    ("slice-two-nodes", "slice", _set("spec.allNodes", True), "spec",
     "Invalid value: '{`nodeName`, `allNodes`}': exactly one of"),
    ("slice-device-dup", "slice",
     lambda o: o["spec"]["devices"].append(copy.deepcopy(o["spec"]["devices"][0])),
     "spec.devices[1]", "Duplicate value: 'gpu-0'"),
    ("slice-device-name", "slice", _set("spec.devices.0.name", "gpu.0"), "spec.devices[0].name",
     "a lowercase RFC 1123 label"),
    ("slice-attribute-two", "slice",
     _set("spec.devices.0.attributes.model", {"string": "a", "int": 1}),
     "spec.devices[0].attributes[model]", "exactly one value must be specified"),
    ("slice-attribute-none", "slice", _set("spec.devices.0.attributes.model", {}),
     "spec.devices[0].attributes[model]", "exactly one value must be specified"),
    ("slice-attribute-name", "slice", _set("spec.devices.0.attributes", {"9lives": {"int": 1}}),
     "spec.devices[0].attributes", "a valid C identifier must start with alphabetic character"),
    ("slice-version", "slice", _set("spec.devices.0.attributes.driverVersion", {"version": "1.2"}),
     "spec.devices[0].attributes[driverVersion].version",
     "must be a string compatible with semver.org spec 2.0.0"),
    ("slice-too-many", "slice",
     _set("spec.devices", [{"name": f"d{i}"} for i in range(129)]),
     "spec.devices", "Too many: 129: must have at most 128 items"),
    ("slice-device-node", "slice", _set("spec.devices.0.nodeName", "node-2"), "spec.devices[0]",
     "can only be set if `perDeviceNodeSelection` is set to true"),
    ("slice-policy-unshared", "slice",
     _set("spec.devices.0.capacity.memory.requestPolicy", {"default": "1Gi"}),
     "spec.devices[0].capacity[memory].requestPolicy",
     "Forbidden: allowMultipleAllocations must be true"),
    ("slice-policy-both", "shared-slice",
     _set(f"{BW_AT}.validValues", ["2"]), f"{BW}",
     'Forbidden: exactly one policy can be specified, cannot specify "validValues" and '
     '"validRange" at the same time'),
    ("slice-values-no-default", "shared-slice",
     _set(f"{BW_AT}", {"validValues": ["2", "4"]}), f"{BW}.default",
     "Required value: required when validValues is defined"),
    ("slice-values-unsorted", "shared-slice",
     _set(f"{BW_AT}", {"default": "2", "validValues": ["4", "2"]}), f"{BW}.validValues[1]",
     "Invalid value: '2': values must be sorted in ascending order"),
    ("slice-values-too-large", "shared-slice",
     _set(f"{BW_AT}", {"default": "2", "validValues": ["2", "12"]}), f"{BW}.validValues[1]",
     "Invalid value: '12': option is larger than capacity value: 10"),
    ("slice-values-default", "shared-slice",
     _set(f"{BW_AT}", {"default": "3", "validValues": ["2", "4"]}), f"{BW}.validValues",
     "Invalid value: '3': default value is not valid according to the requestPolicy"),
    ("slice-range-no-min", "shared-slice",
     _set(f"{BW_AT}.validRange", {"max": "8"}), f"{BW}.validRange.min",
     "Required value: required when validRange is defined"),
    ("slice-range-min", "shared-slice",
     _set(f"{BW_AT}.validRange", {"min": "12"}), f"{BW}.validRange.min",
     "Invalid value: '12': min is larger than capacity value: 10"),
    ("slice-range-default", "shared-slice",
     _set(f"{BW_AT}.default", "1"), f"{BW}.validRange.min",
     "Invalid value: '1': default is less than min: 2"),
    ("slice-range-max", "shared-slice",
     _set(f"{BW_AT}.validRange.max", "12"), f"{BW}.validRange.max",
     "Invalid value: '12': max is larger than capacity value: 10"),
    ("slice-range-step", "shared-slice",
     _set(f"{BW_AT}.validRange.max", "7"), f"{BW}.validRange.step",
     "Invalid value: '7': value is not a multiple of a given step (2) from (2)"),
    ("class-selector", "class", _set("spec.selectors", [{"cel": {"expression": "x" * 10241}}]),
     "spec.selectors[0].cel.expression", "Too long: may not be more than 10240 bytes"),
    ("class-extended", "class", _set("spec.extendedResourceName", "nvidia.com"),
     "spec.extendedResourceName",
     "Invalid value: 'nvidia.com': must be a valid extended resource name"),
    ("pod-claim-dup", "pod",
     _set("spec.resourceClaims", [{"name": "gpu", "resourceClaimName": n} for n in "ab"]),
     "spec.resourceClaims[1].name", "Duplicate value: 'gpu'"),
    ("pod-claim-both", "pod",
     _set("spec.resourceClaims.0.resourceClaimName", "c"), "spec.resourceClaims[0]",
     "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"),
    ("pod-claim-neither", "pod",
     _set("spec.resourceClaims.0.resourceClaimTemplateName", _DELETE), "spec.resourceClaims[0]",
     "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"),
    ("pod-claim-name", "pod", _set("spec.resourceClaims.0.name", "GPU"),
     "spec.resourceClaims[0].name", "a lowercase RFC 1123 label"),
    ("container-claim", "pod", _set("spec.containers.0.resources.claims.0.name", "tpu"),
     "spec.containers[0].resources.claims[0]",
     "Not found: 'tpu': must be one of the names in pod.spec.resourceClaims: gpu"),
    ("container-claim-none", "pod", _set("spec.resourceClaims", []),
     "spec.containers[0].resources.claims[0]",
     "must be one of the names in pod.spec.resourceClaims which is empty"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "change", "field", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_refused_with_upstreams_message(
    case: str, change: Callable[[Obj], None], field: str, reason: str
) -> None:
    kind, make = VALID[case]
    obj = make()
    change(obj)
    result = validate(event(obj), f"{kind}.added")
    assert isinstance(result, ErrorReport), result
    assert result.object_kind == kind
    assert result.name == obj["metadata"]["name"]
    assert result.field == field
    assert reason in result.reason, result.reason


def test_a_deleted_claim_is_checked_for_its_identity_only() -> None:
    obj = claim()
    del obj["spec"]["devices"]["requests"][0]["exactly"]
    assert isinstance(validate(event(obj, "DELETED"), "resourceclaim.deleted"), Accepted)
