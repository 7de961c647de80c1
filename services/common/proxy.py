"""An object with its coroutine methods wrapped, each once, for the edges' wrappers of a
ClusterStore: the edge metrics' (services.common.observe.MeteredStore) and a leader's
(services.common.leaderelection.DeposingStore)."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable
from typing import Any


class AsyncMethods(abc.ABC):
    """``inner`` with every coroutine method wrapped by :meth:`wrap` (once per name);
    anything else, and the methods named in :attr:`plain`, as ``inner`` has them."""

    plain: frozenset[str] = frozenset()

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._wrapped: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        found = self._wrapped.get(name)
        if found is not None:
            return found
        attribute = getattr(self.inner, name)
        if not asyncio.iscoroutinefunction(attribute) or name in self.plain:
            return attribute
        wrapped = self._wrapped[name] = self.wrap(name, attribute)
        return wrapped

    @abc.abstractmethod
    def wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        """The coroutine function standing for ``inner``'s method ``name``."""


__all__ = ["AsyncMethods"]
