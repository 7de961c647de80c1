"""Unknown fields: the keys of a raw object that neither ksched nor Kubernetes knows.

Wire types ignore unknown fields (a watch event carries much that ksched does not model),
so a typo such as ``spec.nodeSelecter`` would be silently dropped. :func:`unknown_fields`
walks the raw object against a Struct's fields (``msgspec.inspect``, once per type) and
names every key that is neither a field of the Struct nor a field Kubernetes defines
there that ksched leaves unmodelled (:data:`UNMODELLED`; their subtrees are not
checked), in kubectl's words: ``spec.containers[0].imagee``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from contracts.k8s.base import ObjectMeta
from contracts.k8s.node import NodeCondition, NodeSpec, NodeStatus
from contracts.k8s.pod import (
    Container,
    ContainerStatus,
    PodCondition,
    PodSpec,
    PodStatus,
    Volume,
)

UNMODELLED: Final[Mapping[type[msgspec.Struct], frozenset[str]]] = {
    ObjectMeta: frozenset({"managedFields", "selfLink"}),
    Container: frozenset(
        {
            "args", "command", "env", "envFrom", "imagePullPolicy", "lifecycle",
            "livenessProbe", "readinessProbe", "resizePolicy", "restartPolicyRules",
            "securityContext", "startupProbe", "stdin", "stdinOnce", "terminationMessagePath",
            "terminationMessagePolicy", "tty", "volumeDevices", "volumeMounts", "workingDir",
        }
    ),
    Volume: frozenset(
        {
            "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker", "gitRepo",
            "glusterfs", "image", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte",
            "scaleIO", "storageos", "vsphereVolume",
        }
    ),
    PodSpec: frozenset(
        {
            "activeDeadlineSeconds", "automountServiceAccountToken", "dnsConfig", "dnsPolicy",
            "enableServiceLinks", "ephemeralContainers", "evictionResponders", "hostAliases",
            "hostIPC", "hostPID", "hostUsers", "hostname", "hostnameOverride",
            "imagePullSecrets", "os", "readinessGates", "resources",
            "runtimeClassName", "securityContext", "serviceAccount",
            "serviceAccountName", "setHostnameAsFQDN", "shareProcessNamespace", "subdomain",
        }
    ),
    PodCondition: frozenset({"observedGeneration"}),
    ContainerStatus: frozenset(
        {
            "allocatedResources", "allocatedResourcesStatus", "containerID", "imageID",
            "lastState", "resources", "started", "stopSignal", "user", "volumeMounts",
        }
    ),
    PodStatus: frozenset(
        {
            "allocatedResources", "ephemeralContainerStatuses", "hostIP", "hostIPs",
            "nodeAllocatableResourceClaimStatuses", "observedGeneration", "podIP", "podIPs",
            "resize", "resources", "volumeHealth",
        }
    ),
    NodeSpec: frozenset({"configSource", "externalID", "podCIDRs", "podPreemptionPolicy"}),
    NodeCondition: frozenset({"lastHeartbeatTime", "lastTransitionTime"}),
    NodeStatus: frozenset(
        {
            "addresses", "config", "daemonEndpoints", "declaredFeatures", "features", "nodeInfo",
            "phase", "runtimeHandlers", "volumesAttached", "volumesInUse",
        }
    ),
}  # fmt: skip
"""Per Struct, the fields the Kubernetes API (core/v1) defines that ksched does not
model: accepted without a warning, their contents unchecked."""


@dataclass(frozen=True, slots=True)
class _Schema:
    """A Struct's wire fields: name → schema of the value (None: not walked)."""

    fields: Mapping[str, _Value | None]
    known: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Value:
    struct: type[msgspec.Struct]
    listed: bool
    """A list of such structs (each item is walked)."""


def unknown_fields(raw: Mapping[str, Any], cls: type[msgspec.Struct]) -> list[str]:
    """Every unknown field of ``raw`` (an object decoded as ``cls``), as a dotted path."""
    return list(_walk(raw, cls, ""))


def _walk(raw: Mapping[str, Any], cls: type[msgspec.Struct], path: str) -> Iterator[str]:
    schema = _schema(cls)
    for key, value in raw.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in schema.fields:
            if key not in schema.known:
                yield where
            continue
        child = schema.fields[key]
        if child is None:
            continue
        if child.listed and isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, Mapping):
                    yield from _walk(item, child.struct, f"{where}[{index}]")
        elif not child.listed and isinstance(value, Mapping):
            yield from _walk(value, child.struct, where)


@functools.cache
def _schema(cls: type[msgspec.Struct]) -> _Schema:
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    fields: dict[str, _Value | None] = {f.encode_name: _value(f.type) for f in info.fields}
    known = set(UNMODELLED.get(cls, frozenset()))
    if info.tag_field is not None:
        known |= {info.tag_field}
    return _Schema(fields, frozenset(known))


def _value(info: msgspec.inspect.Type) -> _Value | None:
    if isinstance(info, msgspec.inspect.UnionType):
        structs = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
        return _value(structs[0]) if len(structs) == 1 else None
    if isinstance(info, msgspec.inspect.StructType):
        return _Value(info.cls, listed=False)
    if isinstance(info, msgspec.inspect.ListType) and isinstance(
        info.item_type, msgspec.inspect.StructType
    ):
        return _Value(info.item_type.cls, listed=True)
    return None
