"""The collector settings every ksched process starts with, and ``settle`` after a
load: what survived is exempt from later collections, and a second settle releases
what the first froze before freezing again."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from services.common import gctune


@pytest.fixture
def restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_tune_raises_the_young_generations_threshold(restored: None) -> None:
    gctune.tune()
    assert gc.get_threshold() == gctune.THRESHOLDS
    assert gctune.THRESHOLDS[0] > 700


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_settle_freezes_what_survived_and_a_second_settle_frees_old_cycles(
    restored: None,
) -> None:
    old = Node()
    gone = weakref.ref(old)
    gctune.settle()
    assert gc.get_freeze_count() > 0
    del old
    gc.collect()
    assert gone() is not None  # frozen: no collection looks at it
    gctune.settle()  # a reload: the old state's cycles go
    assert gone() is None
