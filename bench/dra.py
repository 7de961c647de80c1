"""The DRA setup of a workload (scheduler_perf's ``dra/performance-config.yaml``).

- ``createResourceDriver``: one ResourceSlice per node of the scaled createNodes op,
  named after the node, in a pool of that name, with ``maxClaimsPerNode`` devices
  ``instance-<k>`` carrying upstream's attributes (model A100, family GPU,
  driverVersion 1.2.3, ``dra.example.com/numa`` k) and 1Gi of memory.
- ``createAny``: objects of any kind from a template, ``countParam`` (scaled as pods
  are) or one; ``{{.Index}}`` and ``{{DivideInt .Index N}}`` in its strings are filled
  in per object, as upstream's templates do.
- ``allocResourceClaims``: the claims created in that namespace before it are allocated
  up front: claim ``k`` to device ``instance-<k // nodes>`` of node ``k mod nodes``.

Init pods are bound before the measurement, so their claims must hold their devices:
a pod naming a claim (``resourceClaimName``) goes to that claim's node, the claim
allocated there and reserved for it; a pod naming a template gets a claim generated for
it (as ksched's claim controller would name it) allocated on its node (pod ``i`` on node
``i mod nodes``), and its ``status.resourceClaimStatuses``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

API_VERSION: Final = "resource.k8s.io/v1"
_DIVIDE = re.compile(r"\{\{\s*DivideInt\s+\.Index\s+(\d+)\s*\}\}")
_INDEX = re.compile(r"\{\{\s*\.Index\s*\}\}")


def fill_index(obj: Any, index: int) -> Any:
    """``obj`` with upstream's template expressions over ``.Index`` filled in."""
    if isinstance(obj, str):
        if "{{" not in obj:
            return obj
        text = _DIVIDE.sub(lambda m: str(index // int(m.group(1))), obj)
        return _INDEX.sub(str(index), text)
    if isinstance(obj, dict):
        return {key: fill_index(value, index) for key, value in obj.items()}
    if isinstance(obj, list):
        return [fill_index(value, index) for value in obj]
    return obj


def resource_slice(driver: str, node: str, devices: int) -> dict[str, Any]:
    """scheduler_perf's ``resourceSlice``: the node's pool of ``devices`` devices."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {"name": node, "uid": f"bench-slice-{node}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{k}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": k},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for k in range(devices)
            ],
        },
    }


@dataclass(slots=True)
class DeviceBook:
    """Which device of which node the setup hands out next (init claims)."""

    driver: str
    per_node: int
    node_names: Sequence[str]
    used: dict[str, int] = field(default_factory=dict)

    def take(self, node: str) -> str | None:
        k = self.used.get(node, 0)
        if k >= self.per_node:
            return None
        self.used[node] = k + 1
        return f"instance-{k}"

    def allocation(self, node: str, device: str, requests: Sequence[str]) -> dict[str, Any]:
        """``status.allocation`` of a claim whose requests each got ``device``… one
        device per request is what the bench's claims ask for."""
        return {
            "devices": {
                "results": [
                    {"request": r, "driver": self.driver, "pool": node, "device": device}
                    for r in requests
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }


def request_names(claim_spec: dict[str, Any]) -> list[str]:
    requests = ((claim_spec.get("devices") or {}).get("requests")) or []
    return [str(r.get("name", "")) for r in requests]


def generated_claim_name(pod: str, claim: str, index: int) -> str:
    """A generated claim's name for a bound init pod: ``<pod>-<claim>-<5 chars>``."""
    suffix = msgspec.json.encode(index).decode().rjust(5, "0")[-5:]
    return f"{pod}-{claim}-{suffix}"


def reserve(claim: dict[str, Any], pod: dict[str, Any]) -> None:
    meta = pod["metadata"]
    status = claim.setdefault("status", {})
    status.setdefault("reservedFor", []).append(
        {"resource": "pods", "name": meta["name"], "uid": meta["uid"]}
    )


@dataclass(frozen=True, slots=True)
class AnyObjects:
    """A ``createAny`` op: ``count`` objects (``None``: one) of ``template`` in
    ``namespace`` (cluster-scoped kinds ignore it); ``allocated``: an
    ``allocResourceClaims`` op follows for that namespace."""

    template: Any
    """A :class:`bench.workload.Template`."""
    namespace: str
    count: int | None = None
    allocated: bool = False


@dataclass(frozen=True, slots=True)
class DraSetup:
    driver: str | None
    """``createResourceDriver``'s driverName (None: no slices are created)."""
    per_node: int
    """``maxClaimsPerNode``: devices per node."""
    objects: tuple[AnyObjects, ...] = ()

    def build(
        self,
        node_names: Sequence[str],
        init_pods: Sequence[dict[str, Any]],
        measured_pods: Sequence[dict[str, Any]],
        scale: float,
    ) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
        """The setup objects in creation order, and the init pods (bound, their claims
        allocated); ``scale``: what the workload's counts are multiplied by."""
        book = DeviceBook(self.driver or "", self.per_node, node_names)
        out: list[tuple[str, dict[str, Any]]] = []
        if self.driver is not None:
            out += [
                ("resourceslice", resource_slice(self.driver, n, self.per_node)) for n in node_names
            ]
        claims: dict[str, dict[str, Any]] = {}
        templates: dict[str, dict[str, Any]] = {}
        referenced = _referenced_claims([*init_pods, *measured_pods])
        for op in self.objects:
            kind = op.template.kind
            count = 1 if op.count is None else round(op.count * scale)
            if kind == "resourceclaim" and op.allocated and op.count is not None:
                # Rounded down: a cluster that upstream leaves a few devices free
                # (full: 4990 of 5000) keeps at least one free when scaled down.
                count = int(op.count * scale)
            if kind == "resourceclaim":
                count = max(count, _needed(op, referenced))
            for i in range(count):
                obj = fill_index(op.template.instance(op.namespace, i), i)
                meta = obj["metadata"]
                key = f"{meta.get('namespace', '')}/{meta['name']}"
                if kind == "resourceclaim":
                    claims[key] = obj
                    if op.allocated:
                        node = node_names[i % len(node_names)]
                        device = book.take(node)
                        if device is not None:
                            requests = request_names(obj.get("spec") or {})
                            allocation = book.allocation(node, device, requests)
                            obj.setdefault("status", {})["allocation"] = allocation
                elif kind == "resourceclaimtemplate":
                    templates[key] = obj
                out.append((kind, obj))
        bound = [self._bind(pod, i, node_names, book, claims, templates, out)
                 for i, pod in enumerate(init_pods)]  # fmt: skip
        return out, bound

    def _bind(
        self,
        pod: dict[str, Any],
        i: int,
        node_names: Sequence[str],
        book: DeviceBook,
        claims: dict[str, dict[str, Any]],
        templates: dict[str, dict[str, Any]],
        out: list[tuple[str, dict[str, Any]]],
    ) -> dict[str, Any]:
        meta, spec = pod["metadata"], pod["spec"]
        namespace = meta.get("namespace", "")
        node = spec.get("nodeName") or node_names[i % len(node_names)]
        statuses = []
        for entry in spec.get("resourceClaims") or []:
            named = entry.get("resourceClaimName")
            if named is not None:
                claim = claims.get(f"{namespace}/{named}")
                if claim is None:
                    continue
                status = claim.setdefault("status", {})
                if "allocation" not in status:
                    node = node_names[_index(named) % len(node_names)]
                    device = book.take(node)
                    if device is not None:
                        requests = request_names(claim.get("spec") or {})
                        status["allocation"] = book.allocation(node, device, requests)
                else:
                    node = _allocated_node(status["allocation"], node)
                reserve(claim, pod)
                continue
            template = templates.get(f"{namespace}/{entry.get('resourceClaimTemplateName')}")
            if template is None:
                continue
            name = generated_claim_name(meta["name"], entry["name"], i)
            claim_spec = (template.get("spec") or {}).get("spec") or {}
            generated = {
                "apiVersion": API_VERSION,
                "kind": "ResourceClaim",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": f"bench-{namespace}-{name}",
                    "annotations": {"resource.kubernetes.io/pod-claim-name": entry["name"]},
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": claim_spec,
            }
            device = book.take(node)
            if device is not None:
                allocation = book.allocation(node, device, request_names(claim_spec))
                generated["status"] = {"allocation": allocation}
                reserve(generated, pod)
            out.append(("resourceclaim", generated))
            statuses.append({"name": entry["name"], "resourceClaimName": name})
        spec["nodeName"] = node
        if statuses:
            pod.setdefault("status", {})["resourceClaimStatuses"] = statuses
        return pod


def _referenced_claims(pods: Sequence[dict[str, Any]]) -> set[str]:
    found = set()
    for pod in pods:
        namespace = pod["metadata"].get("namespace", "")
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            if entry.get("resourceClaimName"):
                found.add(f"{namespace}/{entry['resourceClaimName']}")
    return found


def _needed(op: AnyObjects, referenced: set[str]) -> int:
    """Objects of the op's template the pods refer to: one more than the highest index."""
    prefix = f"{op.namespace}/{op.template.prefix}"
    indexes = [_index(key) for key in referenced if key.startswith(prefix)]
    return max(indexes, default=-1) + 1


def _index(name: str) -> int:
    tail = re.search(r"(\d+)$", name)
    return int(tail.group(1)) if tail else 0


def _allocated_node(allocation: dict[str, Any], default: str) -> str:
    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for field_ in term.get("matchFields") or []:
            if field_.get("values"):
                return str(field_["values"][0])
    return default
