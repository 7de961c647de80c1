"""Timed: an extension point's duration and status go to the recorder once, when the
block ends; the span is entered around the timing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from services.framework.runtime.instrument import Timed


class Points:
    def __init__(self) -> None:
        self.points: list[tuple[str, str, str]] = []
        self.seconds: list[float] = []

    def point(self, point: str, status: str, profile: str, seconds: float) -> None:
        self.points.append((point, status, profile))
        self.seconds.append(seconds)


def test_records_success_unless_told_otherwise() -> None:
    recorder = Points()
    with Timed(recorder, "PostBind", "p"):
        pass
    with Timed(recorder, "Reserve", "p") as point:
        point.status = "Unschedulable"
    assert recorder.points == [("PostBind", "Success", "p"), ("Reserve", "Unschedulable", "p")]
    assert all(s >= 0 for s in recorder.seconds) and len(recorder.seconds) == 2


def test_an_exception_records_error_and_goes_on() -> None:
    recorder = Points()
    with pytest.raises(RuntimeError), Timed(recorder, "Unreserve", "p"):
        raise RuntimeError("plugin failed")
    assert recorder.points == [("Unreserve", "Error", "p")]


def test_without_a_recorder_nothing_is_recorded() -> None:
    with Timed(None, "Permit", "p") as point:
        point.status = "Wait"
    assert point.status == "Wait"


def test_the_span_is_around_the_recording() -> None:
    seen: list[str] = []

    class Ordered(Points):
        def point(self, point: str, status: str, profile: str, seconds: float) -> None:
            seen.append("recorded")

    @contextlib.contextmanager
    def span() -> Iterator[None]:
        seen.append("entered")
        yield
        seen.append("left")

    with Timed(Ordered(), "Bind", "p", span()):
        seen.append("ran")
    assert seen == ["entered", "ran", "recorded", "left"]
