"""How the extension points measure themselves: :class:`Timed`, the one helper every
service times a point with (the scheduler's framework and its Reserve and Permit, the
binder's PreBind, Bind, PostBind and Unreserve), the :class:`PointRecorder` it feeds
(``scheduler_framework_extension_point_duration_seconds``), and the framework's
:class:`Recorder` (the scheduler's metrics, with the per-plugin series)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

PluginTimer = Callable[[str, str, str, float, int], None]
"""``(plugin, extension_point, status, seconds, nodes evaluated)``."""


class PointRecorder(Protocol):
    """Where an extension point's duration goes, by point, status code and profile."""

    def point(self, point: str, status: str, profile: str, seconds: float) -> None: ...


class Recorder(PointRecorder, Protocol):
    """The scheduler's metrics, as the framework feeds them."""

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None: ...

    def evaluated(self, plugin: str, point: str, profile: str, count: int) -> None: ...

    def sample(self) -> bool:
        """Whether this attempt's plugin durations are recorded (upstream samples 10%)."""
        ...


class Timed:
    """One run of an extension point, timed::

        with Timed(recorder, "Reserve", profile) as point:
            status = framework.run_reserve_plugins_reserve(state, pod, node)
            point.status = status.code.name

    When the block ends, its duration and ``status`` (``Success`` unless set; ``Error``
    when an exception leaves the block) go to ``recorder.point``; with no recorder
    nothing is recorded. ``span``: the point's trace span (or any context), entered
    before the clock starts and left after the duration is recorded."""

    __slots__ = ("_point", "_profile", "_recorder", "_span", "_started", "status")

    def __init__(
        self,
        recorder: PointRecorder | None,
        point: str,
        profile: str,
        span: AbstractContextManager[Any] | None = None,
    ) -> None:
        self._recorder, self._point, self._profile, self._span = recorder, point, profile, span
        self.status = "Success"
        self._started = 0.0

    def __enter__(self) -> Timed:
        if self._span is not None:
            self._span.__enter__()
        self._started = time.perf_counter()
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> Any:
        elapsed = time.perf_counter() - self._started
        if error is not None:
            self.status = "Error"
        if self._recorder is not None:
            self._recorder.point(self._point, self.status, self._profile, elapsed)
        return None if self._span is None else self._span.__exit__(kind, error, tb)


__all__ = ["PluginTimer", "PointRecorder", "Recorder", "Timed"]
