"""argparse types the ``ksched`` commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number, ``minimum`` or more (and ``maximum`` at most).
    A negative ``--limit`` once made ``watch`` wait forever, a negative ``--nodes`` a
    bench of nothing, and ``--metrics-port 99999`` an internal error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: not a whole number") from None
        if maximum is not None and not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{text!r}: a whole number, {minimum} to {maximum}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: a whole number, {minimum} or more")
        return value

    return parse


__all__ = ["whole"]
