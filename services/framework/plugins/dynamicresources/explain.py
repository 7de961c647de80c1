"""DynamicResources' part of ``--explain`` (``ExplainsNode``): which device of which
pool each request of each of the pod's claims gets on the chosen node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contracts.k8s.resource import AllocationResult
from services.framework.plugins.dynamicresources.state import StateData


def claim_devices(
    data: StateData, node: str, allocations: Sequence[AllocationResult] | None
) -> Mapping[str, Any] | None:
    """``{"claims": {<pod's name for the claim>: {"claim", "allocated", "devices"}}}``
    for the claims allocated before (``allocated`` false) or on ``node`` by Filter
    (``allocations``, in the order of the claims to allocate there); None: none."""
    if not data.claims:
        return None
    count = len(data.scored_claims(node))
    to_allocate = [i for i in data.to_allocate() if i < count]
    fresh = dict(zip(to_allocate, allocations or [], strict=False))
    claims: dict[str, Any] = {}
    for index, claim in enumerate(data.claims[:count]):
        allocation = claim.status.allocation or fresh.get(index)
        if allocation is None:
            continue
        claims[data.names[index]] = {
            "claim": claim.metadata.name,
            "allocated": index in fresh,
            "devices": [
                {"request": r.request, "driver": r.driver, "pool": r.pool, "device": r.device}
                for r in allocation.devices.results
            ],
        }
    return {"claims": claims} if claims else None
