"""A plugin hook outside the extension points: work that depends on cluster objects
alone (not on a pod), done when the scheduler applies them rather than on the next pod."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class WarmUp(Protocol):
    """Precomputes what depends on cluster objects of ``warm_kinds`` alone, not on a pod,
    when the scheduler applied such objects; it never changes a decision."""

    warm_kinds: frozenset[str]

    def warm_up(self) -> None: ...
