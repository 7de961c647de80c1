"""unschedulablePods: pods parked until an event one of their rejecting plugins cares
about (or the leftover flush), and the gated pods a PreEnqueue plugin holds back.

Indexed by rejecting plugin, so that an event only looks at the pods rejected by a
plugin that registered it instead of every parked pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from services.queue.types import QueueEntry


class UnschedulablePods:
    def __init__(self) -> None:
        self._pods: dict[str, QueueEntry] = {}
        self._indexed: dict[str, frozenset[str]] = {}
        self._by_plugin: dict[str, dict[str, QueueEntry]] = {}
        self._gated: set[str] = set()

    @property
    def gated(self) -> int:
        """How many of the parked pods are gated (held back by a PreEnqueue plugin)."""
        return len(self._gated)

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __iter__(self) -> Iterator[QueueEntry]:
        return iter(self._pods.values())

    def add_or_update(self, info: QueueEntry) -> bool:
        """Returns True if the pod was not parked before."""
        uid = info.uid
        new = uid not in self._pods
        self._pods[uid] = info
        if info.gated:
            self._gated.add(uid)
        else:
            self._gated.discard(uid)
        plugins = frozenset(info.rejector_plugins)
        if self._indexed.get(uid) != plugins:
            self._unindex(uid)
            self._indexed[uid] = plugins
            for plugin in plugins:
                self._by_plugin.setdefault(plugin, {})[uid] = info
        return new

    def delete(self, uid: str) -> QueueEntry | None:
        info = self._pods.pop(uid, None)
        if info is not None:
            self._gated.discard(uid)
            self._unindex(uid)
        return info

    def reasons(self) -> dict[tuple[str, str], int]:
        """``scheduler_unschedulable_pods``: the parked pods (not gated) by each plugin
        that rejected them and their profile; a pod counts once per plugin."""
        out: dict[tuple[str, str], int] = {}
        for info in list(self._pods.values()):
            if info.gated:
                continue
            for plugin in info.unschedulable_plugins:
                key = (plugin, info.profile)
                out[key] = out.get(key, 0) + 1
        return out

    def rejected_by(self, plugins: Iterable[str]) -> list[QueueEntry]:
        """The parked pods rejected by any of ``plugins``, each once."""
        found: dict[str, QueueEntry] = {}
        for plugin in plugins:
            found.update(self._by_plugin.get(plugin, {}))
        return list(found.values())

    def _unindex(self, uid: str) -> None:
        for plugin in self._indexed.pop(uid, ()):
            members = self._by_plugin.get(plugin)
            if members is not None:
                members.pop(uid, None)
                if not members:
                    del self._by_plugin[plugin]
