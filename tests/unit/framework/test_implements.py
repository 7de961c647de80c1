"""``implements``: isinstance against a runtime Protocol, remembered per class; the
answer is isinstance's for plugins that have the hook and ones that lack it, and the
class is not inspected again."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import pytest

from services.framework.api.implements import implements


@runtime_checkable
class Hooked(Protocol):
    def hook(self) -> int: ...


class WithHook:
    def hook(self) -> int:
        return 1


class WithoutHook:
    pass


class Subclass(WithHook):
    pass


@pytest.mark.parametrize(
    ("obj", "expected"),
    [(WithHook(), True), (WithoutHook(), False), (object(), False), (Subclass(), True)],
    ids=["has the hook", "lacks it", "a plain object", "inherits it"],
)
def test_the_answer_is_isinstance_s(obj: object, expected: bool) -> None:
    assert isinstance(obj, Hooked) is expected
    assert implements(obj, Hooked) is expected
    assert implements(obj, Hooked) is expected


def test_the_answer_is_remembered_for_the_class() -> None:
    """isinstance remembers a class that matched, not one that did not: a plugin
    without the hook paid the whole inspection on every check."""

    class Fresh:
        pass

    assert not implements(Fresh(), Hooked)
    Fresh.hook = lambda self: 2  # type: ignore[attr-defined]  # plugin classes never change
    assert isinstance(Fresh(), Hooked)
    assert not implements(Fresh(), Hooked)  # not asked again
