"""A found solution as ``AllocationResult``s (the end of upstream's ``Allocate`` and
``createNodeSelector``).

Per claim: one result per picked device, in pick order; the configs of each used
class once (``FromClass``, in request order), then the claim's own configs that apply
(``FromClaim``), each with the request names it applies to. The
node selector is the node itself when a device is node-local (or binds to the node),
else the union of the single-term node selectors of the devices' slices, else none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.k8s import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from contracts.k8s.resource import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    OpaqueDeviceConfiguration,
    ResourceClaim,
)
from services.framework.plugins.dynamicresources.allocator import AllocationError
from services.framework.plugins.dynamicresources.allocator.setup import Picked, SearchState

if TYPE_CHECKING:
    from services.framework.plugins.dynamicresources.allocator.search import Allocator


def build_results(owner: Allocator, state: SearchState, node: Node) -> list[AllocationResult]:
    out: list[AllocationResult] = []
    binding = owner.features.device_binding
    for claim_i, claim in enumerate(state.claims):
        picked = state.results[claim_i]
        devices = [
            DeviceRequestAllocationResult(
                request=p.request if p.parent is None else f"{p.parent}/{p.request}",
                driver=p.candidate.driver,
                pool=p.candidate.pool,
                device=p.candidate.device.name,
                admin_access=True if p.admin_access else None,
                tolerations=list(p.view.tolerations),
                binding_conditions=list(p.candidate.device.binding_conditions) if binding else [],
                binding_failure_conditions=(
                    list(p.candidate.device.binding_failure_conditions) if binding else []
                ),
                share_id=p.share_id,
                consumed_capacity=p.consumed or {},
            )
            for p in picked
        ]
        try:
            selector = _node_selector(picked, node, binding)
        except ValueError as err:
            raise AllocationError(
                f"create NodeSelector for claim {claim.metadata.name}: {err}"
            ) from None
        out.append(
            AllocationResult(
                devices=DeviceAllocationResult(
                    results=devices, config=_configs(state, claim_i, claim)
                ),
                node_selector=selector,
            )
        )
    return out


def _configs(
    state: SearchState, claim_i: int, claim: ResourceClaim
) -> list[DeviceAllocationConfiguration]:
    configs: list[tuple[str, list[str], OpaqueDeviceConfiguration | None]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    requests = claim.spec.devices.requests
    for request_i in range(len(requests)):
        data = state.request_data[(claim_i, request_i, 0)]
        if data.parent is not None:
            data = state.request_data[(claim_i, request_i, data.selected_sub_request)]
        device_class = data.device_class
        if device_class is None:
            continue
        found = class_ranges.get(device_class.metadata.name)
        if found is not None:
            for i in range(*found):
                configs[i][1].append(data.request_name)
            continue
        start = len(configs)
        for config in device_class.spec.config:
            configs.append(("FromClass", [data.request_name], config.opaque))
        class_ranges[device_class.metadata.name] = (start, len(configs))
    for claim_config in claim.spec.devices.config:
        names = claim_config.requests
        if not names:
            configs.append(("FromClaim", [], claim_config.opaque))
            continue
        for request_i, request in enumerate(requests):
            if request.name in names:
                configs.append(("FromClaim", list(names), claim_config.opaque))
                continue
            data = state.request_data[(claim_i, request_i, 0)]
            if data.parent is None:
                continue
            sub = request.first_available[data.selected_sub_request]
            if f"{request.name}/{sub.name}" in names:
                configs.append(("FromClaim", list(names), claim_config.opaque))
    return [
        DeviceAllocationConfiguration(
            source=source,
            requests=names,
            opaque=opaque,
        )
        for source, names, opaque in configs
    ]


def _node_selector(picked: list[Picked], node: Node, binding: bool) -> NodeSelector | None:
    fields: list[NodeSelectorRequirement] = []
    expressions: list[NodeSelectorRequirement] = []
    for p in picked:
        device, spec = p.candidate.device, p.candidate.slice.spec
        if binding and device.binds_to_node:
            return _name_selector(node.metadata.name)
        if spec.per_device_node_selection:
            node_name, selector = device.node_name, device.node_selector
        else:
            node_name, selector = spec.node_name, spec.node_selector
        if node_name:
            return _name_selector(node_name)
        if selector is None:
            continue
        terms = selector.node_selector_terms
        if len(terms) == 1:
            _add_new(terms[0].match_fields, fields)
            _add_new(terms[0].match_expressions, expressions)
        elif len(terms) > 1:
            raise ValueError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
    if fields or expressions:
        return NodeSelector(
            node_selector_terms=[
                NodeSelectorTerm(match_expressions=expressions, match_fields=fields)
            ]
        )
    return None


def _name_selector(name: str) -> NodeSelector:
    return NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_fields=[
                    NodeSelectorRequirement(key="metadata.name", operator="In", values=[name])
                ]
            )
        ]
    )


def _add_new(source: list[NodeSelectorRequirement], into: list[NodeSelectorRequirement]) -> None:
    for requirement in source:
        values = set(requirement.values)
        if not any(
            r.key == requirement.key
            and r.operator == requirement.operator
            and set(r.values) == values
            for r in into
        ):
            into.append(requirement)
