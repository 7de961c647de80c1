"""DynamicResources' Score (DRAPrioritizedList): a node where the pod gets a
higher-ranked ``firstAvailable`` alternative scores more."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from contracts.k8s.resource import AllocationResult, ResourceClaim
from services.framework.api.status import StatusError

FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE: Final = 8


def compute_score(claims: Sequence[ResourceClaim], allocations: Sequence[AllocationResult]) -> int:
    """``computeScore``: per ``firstAvailable`` request, ``8 - rank`` of each
    subrequest that got devices; a claim allocated before this cycle counts with its
    own allocation."""
    score, fresh = 0, 0
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is None:
            if fresh >= len(allocations):
                raise StatusError(
                    f"number of allocations {len(allocations)} is smaller than number of "
                    "claims needing allocation"
                )
            allocation = allocations[fresh]
            fresh += 1
        chosen = {r.request for r in allocation.devices.results if "/" in r.request}
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                continue
            for rank, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in chosen:
                    score += FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE - rank
    return score
