"""Failpoints: named places where a process can be made to die as ``kill -9`` would,
so the reliability tests can stop a service at an exact step instead of racing a
signal against it. ``KSCHED_FAILPOINTS`` lists the armed names (comma-separated);
unset, :func:`hit` is one dictionary lookup."""

from __future__ import annotations

import os
import signal

VARIABLE = "KSCHED_FAILPOINTS"


def armed(environ: dict[str, str] | None = None) -> frozenset[str]:
    text = (os.environ if environ is None else environ).get(VARIABLE, "")
    return frozenset(name.strip() for name in text.split(",") if name.strip())


_ARMED = armed()


def hit(name: str) -> None:
    """Die here, with SIGKILL, when ``name`` is armed."""
    if name in _ARMED:
        os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["VARIABLE", "armed", "hit"]
