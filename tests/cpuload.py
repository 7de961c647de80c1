"""A CPU hog, for running the suite on a busy machine (``ops/test --under-load``).

One process keeps one core ``--busy`` of the time busy: in every ``--period`` it spins
for that fraction of the period and sleeps for the rest. It ends on SIGTERM or SIGINT,
and by itself as soon as the process ``--parent`` names is gone (ops/test, even one that
was killed with -9), so it never outlives the run it loads::

    python -m tests.cpuload --busy 0.85 --parent $$
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType

BUSY = 0.85
"""The fraction of one core kept busy by default (what issue 26 saw fail)."""
PERIOD = 0.1
"""Seconds of one spin-and-sleep cycle."""


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in (0, 1]")
    return value


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (and is not a zombie left by its parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state != "Z"


def hog(
    busy: float,
    period: float,
    keep_going: Callable[[], bool],
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Spin ``busy`` of every ``period`` seconds, sleep the rest, while ``keep_going()``
    (asked once a period); returns the number of periods run."""
    periods = 0
    while keep_going():
        start = clock()
        while clock() - start < busy * period:
            pass
        rest = period - (clock() - start)
        if rest > 0:
            sleep(rest)
        periods += 1
    return periods


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cpuload", description=__doc__)
    parser.add_argument("--busy", type=fraction, default=BUSY, help="fraction of one core")
    parser.add_argument("--period", type=float, default=PERIOD, help="seconds per cycle")
    parser.add_argument(
        "--parent", type=int, default=os.getppid(), help="end when this process is gone"
    )
    parser.add_argument("--check", action="store_true", help="only check the arguments")
    args = parser.parse_args(argv)
    if args.period <= 0:
        parser.error(f"--period: {args.period} is not a positive number of seconds")
    if args.check:
        return 0
    stopped = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"tests.cpuload: one core {args.busy:.0%} busy until pid {args.parent} ends",
        flush=True,
    )
    hog(args.busy, args.period, lambda: not stopped and alive(args.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
