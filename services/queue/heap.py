"""A keyed binary heap with lazy deletion (upstream's ``backend/heap``).

Items are stored by uid. Re-adding an item under the same uid supersedes its old
entry, and deleting only forgets the uid: stale entries stay in the array and are
skipped when they reach the top, so add, update and delete are all O(log n). The
array is rebuilt when stale entries outnumber live ones.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
Key = tuple[Any, ...]

_COMPACT_SLACK = 1024


class KeyedHeap(Generic[T]):
    def __init__(self, key: Callable[[T], Key]) -> None:
        """``key(item)``: a tuple; the smallest key leaves first. Ties are broken by
        insertion order."""
        self._key = key
        self._entries: list[tuple[Key, int, str]] = []
        self._live: dict[str, tuple[int, T]] = {}
        self._tokens = itertools.count()

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, uid: object) -> bool:
        return uid in self._live

    def get(self, uid: str) -> T | None:
        entry = self._live.get(uid)
        return entry[1] if entry is not None else None

    def items(self) -> Iterator[T]:
        return (item for _, item in self._live.values())

    def push(self, uid: str, item: T) -> None:
        """Add ``item``, or re-position it when its key changed (AddOrUpdate)."""
        token = next(self._tokens)
        self._live[uid] = (token, item)
        heapq.heappush(self._entries, (self._key(item), token, uid))
        if len(self._entries) > 2 * len(self._live) + _COMPACT_SLACK:
            self._compact()

    def delete(self, uid: str) -> T | None:
        entry = self._live.pop(uid, None)
        return entry[1] if entry is not None else None

    def peek(self) -> T | None:
        self._drop_stale()
        if not self._entries:
            return None
        return self._live[self._entries[0][2]][1]

    def pop(self) -> T | None:
        self._drop_stale()
        if not self._entries:
            return None
        _, _, uid = heapq.heappop(self._entries)
        return self._live.pop(uid)[1]

    def smallest(self, n: int) -> list[T]:
        """The first ``n`` items in leave order, without removing them: a best-first
        walk from the root, O(n log n) plus the stale entries it meets."""
        found: list[T] = []
        entries = self._entries
        frontier: list[tuple[Key, int, int]] = []
        if entries:
            frontier.append((entries[0][0], entries[0][1], 0))
        while frontier and len(found) < n:
            _, token, index = heapq.heappop(frontier)
            uid = entries[index][2]
            live = self._live.get(uid)
            if live is not None and live[0] == token:
                found.append(live[1])
            for child in (2 * index + 1, 2 * index + 2):
                if child < len(entries):
                    key, child_token, _ = entries[child]
                    heapq.heappush(frontier, (key, child_token, child))
        return found

    def _drop_stale(self) -> None:
        entries, live = self._entries, self._live
        while entries:
            _, token, uid = entries[0]
            current = live.get(uid)
            if current is not None and current[0] == token:
                return
            heapq.heappop(entries)

    def _compact(self) -> None:
        self._entries = [(self._key(item), token, uid) for uid, (token, item) in self._live.items()]
        heapq.heapify(self._entries)
