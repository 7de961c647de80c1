"""Filter's memo of the allocator's answers (dynamicresources.memo): an answer is reused
only while its inputs are the same, and dropped when they change."""

from __future__ import annotations

import msgspec

from contracts.k8s import Node, ResourceSlice
from services.common import features
from services.framework.plugins.dynamicresources.memo import Answer, FilterMemo, signature
from tests.unit.framework.plugins.dra.plugin_support import (
    DRIVER,
    claim,
    device_class,
    resource_slice,
    worker,
)

A, B = worker("worker-a"), worker("worker-b")
SLICES: list[ResourceSlice] = [resource_slice("worker-a"), resource_slice("worker-b")]
CLASSES = {"my-resource-class": device_class()}
KEY = signature([claim()])


def remembered(memo: FilterMemo) -> FilterMemo:
    memo.begin(SLICES, CLASSES, frozenset())
    memo.put(KEY, Answer(A, []))
    memo.put(KEY, Answer(B, None))
    return memo


def test_answers_are_kept_per_node_and_claim_spec() -> None:
    memo = remembered(FilterMemo())
    memo.begin(SLICES, CLASSES, frozenset())
    assert memo.get(KEY, A) == Answer(A, [])
    assert memo.get(KEY, B) == Answer(B, None)
    assert memo.get(signature([claim("other", allocation=None)]), A) is not None  # same spec
    assert memo.get(signature([claim(), claim()]), A) is None


def test_a_device_taken_drops_the_answers_of_its_node_only() -> None:
    memo = remembered(FilterMemo())
    memo.begin(SLICES, CLASSES, frozenset({f"{DRIVER}/worker-a/instance-1"}))
    assert memo.get(KEY, A) is None
    assert memo.get(KEY, B) is not None


def test_a_device_of_a_pool_not_local_to_one_node_drops_every_answer() -> None:
    shared = msgspec.structs.replace(
        SLICES[1], spec=msgspec.structs.replace(SLICES[1].spec, node_name=None, all_nodes=True)
    )
    memo = FilterMemo()
    memo.begin([SLICES[0], shared], CLASSES, frozenset())
    memo.put(KEY, Answer(A, []))
    memo.begin([SLICES[0], shared], CLASSES, frozenset({f"{DRIVER}/worker-b/instance-1"}))
    assert memo.get(KEY, A) is None


def test_other_slices_classes_gates_or_node_objects_are_other_inputs() -> None:
    changed_slices = [SLICES[0], resource_slice("worker-b", DRIVER, "instance-1", "instance-2")]
    memo = remembered(FilterMemo())
    memo.begin(changed_slices, CLASSES, frozenset())
    assert memo.get(KEY, A) is None
    memo = remembered(FilterMemo())
    memo.begin(SLICES, {"my-resource-class": device_class()}, frozenset())
    assert memo.get(KEY, A) is None
    memo = remembered(FilterMemo())
    relabelled: Node = worker("worker-a")
    assert memo.get(KEY, relabelled) is None  # another node object
    memo = remembered(FilterMemo())
    saved = features.current()
    try:
        features.install(features.parse("DRAPartitionableDevices=false"))
        memo.begin(SLICES, CLASSES, frozenset())
        assert memo.get(KEY, A) is None
    finally:
        features.install(saved)
