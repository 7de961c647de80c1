"""Fuzzed watch events: valid ones and mutations of them that the informer must refuse.

:func:`generate` makes the ``index``-th case from a ``random.Random``; the Hypothesis test
draws the Random (so it is deterministic and shrinkable), ``ops/fuzz`` seeds one. Every
case knows what must happen to it: a valid event is recorded (log and store) under
``kind``/``key``; an invalid one yields exactly one ErrorReport whose ``field`` starts with
``field`` and, where the object's name can be read, whose ``name`` is ``name``.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contracts import topology
from contracts.kinds import KINDS, NAMESPACED

NAMESPACE = "fuzz"


@dataclass(frozen=True, slots=True)
class Case:
    kind: str
    routing_key: str
    body: bytes
    valid: bool
    mutation: str
    key: str = ""
    """Store key of a valid case."""
    name: str | None = None
    """The name the report must give (None: it need not name the object)."""
    field: str = ""
    """Prefix of the report's field (invalid cases)."""


Obj = dict[str, Any]


def _base(kind: str, name: str, uid: str) -> Obj:
    meta: Obj = {"name": name, "uid": uid, "labels": {"app": "web", "example.com/tier": "a"}}
    if kind in NAMESPACED:
        meta["namespace"] = NAMESPACE
    obj: Obj = {"metadata": meta}
    selector = {"matchLabels": {"app": "web"}}
    match kind:
        case "pod":
            obj["spec"] = {
                "containers": [
                    {
                        "name": "app",
                        "image": "nginx:1.27",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ],
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": selector,
                    }
                ],
                "nodeSelector": {"kubernetes.io/os": "linux"},
            }
        case "node":
            obj["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
            obj["status"] = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        case "priorityclass":
            obj["value"] = 1000
        case "poddisruptionbudget":
            obj["spec"] = {"minAvailable": 1, "selector": selector}
        case "service" | "replicationcontroller":
            obj["spec"] = {"selector": {"app": "web"}}
        case "replicaset" | "statefulset":
            obj["spec"] = {"selector": selector}
        case "podgroup":
            obj["spec"] = {"minMember": 2, "minResources": {"cpu": "1"}}
        case "deviceclass":
            obj["spec"] = {"selectors": [{"cel": {"expression": _GPU_SELECTOR}}]}
        case "resourceslice":
            obj["spec"] = {
                "driver": "gpu.example.com",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "node-1",
                "devices": [
                    {
                        "name": "gpu-0",
                        "attributes": {
                            "model": {"string": "a100"},
                            "gpu.example.com/x": {"int": 1},
                        },
                        "capacity": {"memory": {"value": "40Gi"}},
                    }
                ],
            }
        case "resourceclaim":
            obj["spec"] = _claim_spec()
        case "resourceclaimtemplate":
            obj["spec"] = {"metadata": {"labels": {"app": "web"}}, "spec": _claim_spec()}
        case "workload":
            policy = {"gang": {"minCount": 2}}
            obj["spec"] = {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": policy}]}
        case "schedulingpodgroup":
            obj["spec"] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    return obj


_GPU_SELECTOR = 'device.driver == "gpu.example.com"'


def _claim_spec() -> Obj:
    return {
        "devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}],
            "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/x"}],
        }
    }


def _key(kind: str, obj: Obj) -> str:
    name = obj["metadata"]["name"]
    return f"{NAMESPACE}/{name}" if kind in NAMESPACED else name


def _event(obj: Obj | None, type_: str = "ADDED") -> bytes:
    return json.dumps({"type": type_, "object": obj}, ensure_ascii=False).encode()


@dataclass(frozen=True, slots=True)
class _Made:
    body: bytes
    field: str
    name: str | None
    routing_key: str = ""
    valid: bool = False


Mutation = Callable[[random.Random, str, Obj, int], _Made | None]
"""(rng, kind, a valid object, index) → the mutated event, or None if it does not apply."""


def _named(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def valid(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    type_ = rng.choice(["ADDED", "MODIFIED"])
    key = topology.event_key(kind, type_)
    return _Made(_event(obj, type_), "", _named(obj), routing_key=key, valid=True)


def extra_fields(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    """Fields ksched does not know are ignored on the bus (watch JSON carries many)."""
    where = rng.choice([obj, obj["metadata"], obj.setdefault("spec", {})])
    where[rng.choice(["zzUnknown", "x-extra", "nested"])] = rng.choice(
        [1, "s", None, [1, {"a": []}], {"deep": {"er": [True]}}]
    )
    return _Made(_event(obj), "", _named(obj), valid=True)


_WRONG_TYPES: dict[str, list[tuple[tuple[str, ...], Any]]] = {
    "*": [
        (("metadata", "labels"), [1, 2]),
        (("metadata", "labels"), {"a": 1}),
        (("metadata", "annotations"), "x"),
        (("metadata", "uid"), 7),
        (("metadata", "ownerReferences"), {"kind": "x"}),
    ],
    "pod": [
        (("spec", "containers"), "nginx"),
        (("spec", "priority"), "high"),
        (("spec", "priority"), 1.5),
        (("spec", "tolerations"), {}),
        (("spec", "nodeSelector"), ["a"]),
        (("spec", "hostNetwork"), "yes"),
    ],
    "node": [(("status", "allocatable"), []), (("spec", "unschedulable"), "no")],
    "priorityclass": [(("value",), "high"), (("globalDefault",), 1)],
    "poddisruptionbudget": [(("spec", "minAvailable"), [1])],
    "resourceslice": [(("spec", "pool", "generation"), "1"), (("spec", "devices"), {})],
    "resourceclaim": [(("spec", "devices", "requests"), "gpu")],
    "deviceclass": [(("spec", "selectors"), [1])],
}


def wrong_type(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    path, value = rng.choice(_WRONG_TYPES["*"] + _WRONG_TYPES.get(kind, []))
    where = obj
    for part in path[:-1]:
        where = where.setdefault(part, {})
    where[path[-1]] = value
    return _Made(_event(obj), ".".join(path), _named(obj))


def missing_required(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    choice = rng.randrange(4 if kind == "pod" else 3)
    if choice == 0:
        return _Made(json.dumps({"object": obj}).encode(), "type", _named(obj))
    if choice == 1:
        return _Made(json.dumps({"type": "ADDED"}).encode(), "object", None)
    if choice == 2:
        del obj["metadata"]["name"]
        return _Made(_event(obj), "metadata.name", None)
    del obj["spec"]["topologySpreadConstraints"][0]["maxSkew"]
    return _Made(_event(obj), "spec.topologySpreadConstraints[0].maxSkew", _named(obj))


def bad_name(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    name = rng.choice(
        [
            f"Fz{i}",
            f"fz{i}/x",
            f"fz{i}\x00",
            f"fz{i}" + "a" * 100_000,
            f"-fz{i}",
            f"fz{i}-",
            f"fz{i}_x",
            f"fz{i}ü",
            f"fz{i} x",
            f"fz{i}..x",
            f"fz{i}\n",
        ]
        + ([f"fz{i}.x"] if kind == "namespace" else [])
        + ([f"{i}fz"] if kind == "service" else [])
        + ([f"system-fz{i}"] if kind == "priorityclass" else [])
    )
    obj["metadata"]["name"] = name
    return _Made(_event(obj), "metadata.name", name)


def bad_namespace(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    if kind in NAMESPACED:
        obj["metadata"]["namespace"] = rng.choice(["Fuzz", "fuzz.x", "-fuzz", "f" * 64, "fü"])
    else:
        obj["metadata"]["namespace"] = "fuzz"
    return _Made(_event(obj), "metadata.namespace", _named(obj))


def bad_label(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    labels = obj["metadata"]["labels"]
    if rng.random() < 0.5:
        labels[rng.choice(["-x", "a/b/c", "/x", "x" * 64, "Example.com/x", "a b", "ü", ""])] = "v"
    else:
        labels["k"] = rng.choice(["-v", "v" * 64, "a\x00", "ü", "a b", "v-"])
    return _Made(_event(obj), "metadata.labels", _named(obj))


def many_labels(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    obj["metadata"]["labels"] = {f"k{n}": "v" for n in range(rng.randint(257, 5000))}
    return _Made(_event(obj), "metadata.labels", _named(obj))


def bad_annotations(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    if rng.random() < 0.5:
        obj["metadata"]["annotations"] = {"blob": "x" * rng.randint(262_145, 900_000)}
    else:
        obj["metadata"]["annotations"] = {rng.choice(["-a", "a/b/c", "x" * 70]): "v"}
    return _Made(_event(obj), "metadata.annotations", _named(obj))


def oversized(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    obj["metadata"]["annotations"] = {"blob": "x" * rng.randint(1_048_577, 1_300_000)}
    return _Made(_event(obj), "", _named(obj))


def deep_nesting(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    depth = rng.choice([65, 100, 999, 1000, 1001, 5000, 50_000])
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    body = _event(obj)[:-2] + f',"x":{opener * depth}1{closer * depth}}}}}'.encode()
    return _Made(body, "", None)


def invalid_utf8(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    body = _event(obj)
    marker = f'"{_named(obj)}"'.encode()
    junk = rng.choice([b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\x80abc"])
    return _Made(body.replace(marker, marker[:-1] + junk + b'"', 1), "", None)


def truncated(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    body = _event(obj)
    return _Made(body[: rng.randrange(0, len(body) - 1)], "", None)


def wrong_content(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    body = rng.choice(
        [b"", b"null", b"[]", b"42", b'"s"', b"type: ADDED\nobject: {}\n", b"\x82\xa4type",
         b"<event/>", b"\x00\x00\x00", b"{}", b'{"type": null, "object": {}}']
    )  # fmt: skip
    field = "type" if body.startswith(b"{") else ""
    return _Made(body, field, None)


def unknown_kind(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    key = rng.choice(["gadget.added", "gizmo.added", ".added", "POD!.added", "💥.added"])
    return _Made(_event(obj), "kind", _named(obj), routing_key=key)


def unknown_type(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    if rng.random() < 0.5:
        type_ = rng.choice(["BOOKMARK", "ERROR", "added", "", "UPSERT"])
        return _Made(_event(obj, type_), "type", _named(obj))
    return _Made(_event(obj), "type", _named(obj), routing_key=f"{kind}.deleted")


_QUANTITIES: list[Any] = [
    "\uff11\uff10\uff10m", "1e999", "-1", "abc", "1.2.3", " 1", "NaN", "0x10",
    "9223372036854775808",
    "1Gi ", "٣", "1e", "", True, None, [], {"v": 1}, 2**70, "8Ei",
]  # fmt: skip


def bad_quantity(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made | None:
    value = rng.choice(_QUANTITIES)
    if kind == "pod":
        obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = value
        field = "spec.containers[0].resources.requests"
    elif kind == "node":
        obj["status"]["allocatable"]["memory"] = value
        field = "status.allocatable"
    else:
        return None
    return _Made(_event(obj), field, _named(obj))


def too_many_items(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made | None:
    if kind == "node":
        obj["spec"]["taints"] = [{"key": f"k{n}", "effect": "NoSchedule"} for n in range(300)]
        return _Made(_event(obj), "spec.taints", _named(obj))
    if kind != "pod":
        return None
    spec = obj["spec"]
    field = rng.choice(["containers", "tolerations", "topologySpreadConstraints"])
    item = spec[field][0]
    count = {"containers": 257, "tolerations": 257, "topologySpreadConstraints": 65}[field]
    spec[field] = [copy.deepcopy(item) for _ in range(rng.randint(count, count * 4))]
    if field == "containers":
        for n, c in enumerate(spec[field]):
            c["name"] = f"c{n}"
    return _Made(_event(obj), f"spec.{field}", _named(obj))


def _bad_resource_value(rng: random.Random, kind: str, obj: Obj) -> _Made | None:
    """A resource.k8s.io object the API server refuses (a common mistake each)."""
    spec = obj["spec"]
    if kind == "resourceslice":
        match rng.randrange(4):
            case 0:
                spec["pool"]["resourceSliceCount"] = rng.choice([0, -1])
                field = "spec.pool.resourceSliceCount"
            case 1:
                spec["allNodes"] = True
                field = "spec"
            case 2:
                spec["devices"].append(copy.deepcopy(spec["devices"][0]))
                field = "spec.devices[1]"
            case _:
                spec["devices"][0]["attributes"]["model"] = {"string": "a", "int": 1}
                field = "spec.devices[0].attributes[model]"
        return _Made(_event(obj), field, _named(obj))
    if kind == "deviceclass":
        spec["selectors"] = [{}]
        return _Made(_event(obj), "spec.selectors[0].cel", _named(obj))
    if kind not in ("resourceclaim", "resourceclaimtemplate"):
        return None
    at = "spec.devices" if kind == "resourceclaim" else "spec.spec.devices"
    devices = spec["devices"] if kind == "resourceclaim" else spec["spec"]["devices"]
    request = devices["requests"][0]
    match rng.randrange(4):
        case 0:
            del request["exactly"]
            field = f"{at}.requests[0]"
        case 1:
            request["exactly"]["deviceClassName"] = ""
            field = f"{at}.requests[0].exactly.deviceClassName"
        case 2:
            devices["constraints"][0]["requests"] = ["tpu"]
            field = f"{at}.constraints[0].requests[0]"
        case _:
            request["exactly"]["allocationMode"] = "All"
            request["exactly"]["count"] = 2
            field = f"{at}.requests[0].exactly.count"
    return _Made(_event(obj), field, _named(obj))


def bad_spec_value(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made | None:
    if kind in ("resourceslice", "deviceclass", "resourceclaim", "resourceclaimtemplate"):
        return _bad_resource_value(rng, kind, obj)
    if kind == "priorityclass":
        value = rng.choice([1_000_000_001, 2_000_000_000, 2**31, -(2**31) - 1, 2**80])
        obj["value"] = value
        return _Made(_event(obj), "value", _named(obj))
    if kind != "pod":
        return None
    spec = obj["spec"]
    match rng.randrange(5):
        case 0:
            spec["priority"] = rng.choice([2**31, -(2**31) - 1, 2**70])
            return _Made(_event(obj), "spec.priority", _named(obj))
        case 1:
            spec["containers"][0]["name"] = rng.choice(["App", "", "a_b", "a" * 64])
            return _Made(_event(obj), "spec.containers[0].name", _named(obj))
        case 2:
            spec["containers"].append(copy.deepcopy(spec["containers"][0]))
            return _Made(_event(obj), "spec.containers[1].name", _named(obj))
        case 3:
            spec["topologySpreadConstraints"][0]["maxSkew"] = rng.choice([0, -1, 2**40])
            return _Made(_event(obj), "spec.topologySpreadConstraints[0].maxSkew", _named(obj))
        case _:
            spec["nodeSelector"] = {"bad key!": "v"}
            return _Made(_event(obj), "spec.nodeSelector", _named(obj))


def unicode_text(rng: random.Random, kind: str, obj: Obj, i: int) -> _Made:
    """Free text (not a name, label or quantity) may hold any unicode, NUL included."""
    text = rng.choice(["\x00", "💥", "\u202e", "\uff41\uff42\uff43", "\ufeff", "a\u0301"])
    obj["metadata"]["annotations"] = {"note": text * rng.randint(1, 50)}
    return _Made(_event(obj), "", _named(obj), valid=True)


VALID_MUTATIONS: tuple[Mutation, ...] = (valid, extra_fields, unicode_text)
INVALID_MUTATIONS: tuple[Mutation, ...] = (
    wrong_type,
    missing_required,
    bad_name,
    bad_namespace,
    bad_label,
    many_labels,
    bad_annotations,
    oversized,
    deep_nesting,
    invalid_utf8,
    truncated,
    wrong_content,
    unknown_kind,
    unknown_type,
    bad_quantity,
    too_many_items,
    bad_spec_value,
)


def generate(rng: random.Random, index: int, *, invalid_share: float = 0.9) -> Case:
    """The ``index``-th case: a fresh object (unique name and uid), mutated or not."""
    kind = rng.choice(sorted(KINDS))
    name = f"fz{index}"
    while True:
        obj = _base(kind, name, f"uid-fz-{index}")
        invalid = rng.random() < invalid_share
        mutation = rng.choice(INVALID_MUTATIONS if invalid else VALID_MUTATIONS)
        made = mutation(rng, kind, obj, index)
        if made is not None:
            break
    routing_key = made.routing_key or topology.event_key(kind, "added")
    return Case(
        kind=kind,
        routing_key=routing_key,
        body=made.body,
        valid=made.valid,
        mutation=mutation.__name__,
        key=_key(kind, obj) if made.valid else "",
        name=made.name,
        field=made.field,
    )
