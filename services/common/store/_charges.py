"""Rules both store backends share: how a request is normalised and when it fits.

The Redis backend repeats :func:`fit_reasons` in Lua (``_lua.py``); the contract suite
holds the two to the same answers.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from services.common.store.base import PODS


def normalize(requests: Mapping[str, int]) -> dict[str, int]:
    """The charge of a pod: positive requests only, in name order, and always ``pods: 1``
    (a pod is one pod whatever ``requests["pods"]`` says, as upstream's NodeInfo counts)."""
    charge = {name: int(amount) for name, amount in requests.items() if int(amount) > 0}
    charge[PODS] = 1
    return dict(sorted(charge.items()))


def fit_reasons(
    requests: Mapping[str, int],
    usage: Mapping[str, int],
    allocatable: Mapping[str, int],
    checked: Collection[str] | None = None,
) -> list[str]:
    """Why a normalised request does not fit (empty when it fits), as NodeResourcesFit says
    it: ``pods`` always counts one, every other resource is checked only when requested;
    a resource the node does not list has an allocatable of 0. Only the resources in
    ``checked`` are looked at (None: all of them)."""

    def checks(name: str) -> bool:
        return checked is None or name in checked

    reasons = []
    if checks(PODS) and usage.get(PODS, 0) + 1 > allocatable.get(PODS, 0):
        reasons.append("Too many pods")
    for name, amount in requests.items():
        if name == PODS or not checks(name):
            continue
        if usage.get(name, 0) + amount > allocatable.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def devices_taken(held: Sequence[str]) -> str:
    """The reason of a reservation refused for DRA devices others hold (both backends
    word it here, the Redis one from the devices its script returns)."""
    if len(held) == 1:
        return f"device {held[0]} is already allocated"
    return f"devices {', '.join(held)} are already allocated"
