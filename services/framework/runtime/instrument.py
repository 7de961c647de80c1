"""How the framework measures itself: the :class:`Recorder` it feeds (the scheduler's
metrics), and :class:`Timed`, an extension point's span that records the point's
duration and status."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

PluginTimer = Callable[[str, str, str, float, int], None]
"""``(plugin, extension_point, status, seconds, nodes evaluated)``."""


class Recorder(Protocol):
    """The scheduler's metrics, as the framework feeds them."""

    def point(self, point: str, status: str, profile: str, seconds: float) -> None: ...

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None: ...

    def evaluated(self, plugin: str, point: str, profile: str, count: int) -> None: ...

    def sample(self) -> bool:
        """Whether this attempt's plugin durations are recorded (upstream samples 10%)."""
        ...


class Timed:
    """An extension point's span (or none) that records its duration and status."""

    __slots__ = ("_inner", "_name", "_profile", "_recorder", "_started", "status")

    def __init__(self, inner: Any, recorder: Recorder, name: str, profile: str) -> None:
        self._inner, self._recorder, self._name, self._profile = inner, recorder, name, profile
        self.status = "Success"
        self._started = 0.0

    def __enter__(self) -> Timed:
        self._inner.__enter__()
        self._started = time.perf_counter()
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> Any:
        elapsed = time.perf_counter() - self._started
        if error is not None:
            self.status = "Error"
        self._recorder.point(self._name, self.status, self._profile, elapsed)
        return self._inner.__exit__(kind, error, tb)


__all__ = ["PluginTimer", "Recorder", "Timed"]


def record_point(
    recorder: Recorder | None, profile: str, point: str, status: str, began: float
) -> None:
    """An extension point's duration since ``began`` (``time.perf_counter``) and its
    status code, when there is a recorder (the framework is measured)."""
    if recorder is not None:
        recorder.point(point, status, profile, time.perf_counter() - began)
