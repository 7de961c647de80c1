"""Filter's answers remembered across pods: what the allocator said for a node, reused
while nothing it depends on has changed (ksched's, for speed; upstream asks the
allocator for every node of every pod).

The allocator's answer for ``(claims to allocate, node)`` is a function of the claims'
specs, the node object, the ResourceSlices and DeviceClasses, the feature gates and the
devices already taken. So an answer is kept per claims' specs (:func:`signature`) and
node, and dropped when one of those inputs changes:

- slices, classes or gates change (another object, compared by identity: the objects are
  immutable and replaced on update; the memo keeps them alive so an identity is never
  reused): everything is dropped;
- the node object changes: its answer is dropped (kept with the node it was for);
- devices are taken or freed: the answers of the node whose node-local pool holds them
  are dropped, or every answer when the pool is not node-local.

A pod whose claims are made from one template (the common case) then asks the
allocator only about the node the previous pod took devices on.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import msgspec
import numpy as np

from contracts.k8s import DeviceClass, Node, ResourceSlice
from contracts.k8s.resource import AllocationResult, ResourceClaim
from services.common import features
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.dynamicresources.allocator import split_device_id

MAX_SIGNATURES: Final = 64
"""Distinct claim specs remembered (least recently used dropped first)."""

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class Answer:
    node: Node
    """The node object the answer is for."""
    allocations: list[AllocationResult] | None
    """The allocator's answer (None: the claims cannot all be allocated there)."""
    failed: str | None = None
    """``AllocationFailedOnNode``'s message instead of an answer."""


def signature(claims: Sequence[ResourceClaim]) -> bytes:
    """What the claims ask for, as the allocator reads it (their specs, in order)."""
    return b"\x00".join(_encoder.encode(c.spec) for c in claims)


@dataclass(slots=True)
class _Codes:
    """Filter's codes for every row of a snapshot layout, and the nodes whose answers
    were dropped since (to ask again)."""

    index: object
    nodes: tuple[Node, ...]
    codes: np.ndarray
    dirty: set[str]


class FilterMemo:
    def __init__(self) -> None:
        self._inputs: tuple[object, ...] = ()
        self._kept: tuple[object, ...] = ()
        self._taken: frozenset[str] = frozenset()
        self._pool_node: dict[tuple[str, str], str | None] = {}
        self._answers: OrderedDict[bytes, dict[str, Answer]] = OrderedDict()
        self._codes: dict[bytes, _Codes] = {}

    def begin(
        self,
        slices: Sequence[ResourceSlice],
        classes: Mapping[str, DeviceClass],
        taken: Container[str],
        generation: int | None = None,
        changed: Iterable[str] | None = None,
    ) -> None:
        """Before a pod's Filter: drop what the changes since the last pod invalidate.
        ``generation``: the listers' ``device_generation`` (the slices and classes are
        the same while it is), else they are compared object by object. ``changed``:
        the devices taken or freed since the last call, when the caller knows them;
        else ``taken`` (a set) is compared with the last one."""
        if generation is not None:
            inputs: tuple[object, ...] = (generation, id(features.current()))
        else:
            ids = (tuple(map(id, slices)), tuple(map(id, classes.values())))
            inputs = (*ids, id(features.current()))
        if inputs != self._inputs:
            self._inputs = inputs
            self._kept = (tuple(slices), tuple(classes.values()), features.current())
            self._pool_node = _pool_nodes(slices)
            self._answers.clear()
            self._codes.clear()
            self._taken = taken if isinstance(taken, frozenset) else frozenset()
            return
        if changed is None:
            assert isinstance(taken, frozenset), "without changed, taken is a set"
            changed = taken ^ self._taken
            self._taken = taken
        if not changed:
            return
        nodes: set[str] = set()
        for device in changed:
            driver, pool, _ = split_device_id(device)
            node = self._pool_node.get((driver, pool))
            if node is None:  # not node-local (or unknown): may serve any node
                self._answers.clear()
                self._codes.clear()
                return
            nodes.add(node)
        for answers in self._answers.values():
            for node in nodes:
                answers.pop(node, None)
        for cached in self._codes.values():
            cached.dirty |= nodes

    def get(self, key: bytes, node: Node) -> Answer | None:
        answers = self._answers.get(key)
        if answers is None:
            return None
        self._answers.move_to_end(key)
        answer = answers.get(node.metadata.name)
        return answer if answer is not None and answer.node is node else None

    def answer(self, key: bytes, node: str) -> Answer | None:
        """The answer kept for ``node`` (by name: for the attempt whose Filter used it)."""
        answers = self._answers.get(key)
        return None if answers is None else answers.get(node)

    def codes(self, key: bytes, nodes: Snapshot) -> tuple[np.ndarray, set[str]] | None:
        """Filter's codes for ``nodes`` (a copy) and the nodes to ask about again, when
        kept for the same rows of the same node objects."""
        cached = self._codes.get(key)
        if cached is None or cached.index is not nodes.index:
            return None
        if len(cached.nodes) != len(nodes.nodes) or not all(
            map(operator.is_, cached.nodes, nodes.nodes)
        ):
            return None
        return cached.codes.copy(), cached.dirty

    def keep_codes(self, key: bytes, nodes: Snapshot, codes: np.ndarray) -> None:
        """Filter's codes for every row of ``nodes``, all answered now."""
        if key in self._answers:
            self._codes[key] = _Codes(nodes.index, tuple(nodes.nodes), codes.copy(), set())

    def put(self, key: bytes, answer: Answer) -> None:
        answers = self._answers.get(key)
        if answers is None:
            answers = self._answers[key] = {}
            if len(self._answers) > MAX_SIGNATURES:
                dropped, _ = self._answers.popitem(last=False)
                self._codes.pop(dropped, None)
        answers[answer.node.metadata.name] = answer


def _pool_nodes(slices: Sequence[ResourceSlice]) -> dict[tuple[str, str], str | None]:
    """(driver, pool) → the one node all its slices are local to; None when a slice of
    the pool is not node-local or they name different nodes."""
    found: dict[tuple[str, str], str | None] = {}
    for resource_slice in slices:
        spec = resource_slice.spec
        key = (spec.driver, spec.pool.name)
        local = spec.node_name if not (spec.all_nodes or spec.node_selector) else None
        if spec.per_device_node_selection:
            local = None
        if key in found and found[key] != local:
            local = None
        found[key] = local
    return found
