"""How a service process ends on SIGTERM or SIGINT, whatever it is doing.

- The first signal sets :attr:`Shutdown.requested` (the service stops cleanly: handlers
  finish or their messages are not acknowledged) and arms a watchdog: the process
  ends ``bound`` seconds later at the latest, even if stopping hangs.
- A second signal ends the process at once: one line on stderr, ``os._exit(128 + signal)``.

The handlers are process-wide (``signal.signal``, not the event loop's), so they keep
working before the loop runs and after it is closed, while ``asyncio.run`` cancels what
is left and while the interpreter exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

STOP_BOUND = 9.0
"""Seconds from the first signal (or the end of the run) to the end of the process, at
most; under the 10 s that supervisors and the tests allow."""
EXIT_STUCK = 70
"""Exit code when stopping outlived ``STOP_BOUND``: a bug (ksched's internal-error code)."""

log = logging.getLogger("ksched")

Timer = Callable[[float, Callable[[], None]], None]
"""Calls the function after the seconds, from another thread; must not keep the process
alive by itself."""


def _daemon_timer(seconds: float, function: Callable[[], None]) -> None:
    timer = threading.Timer(seconds, function)
    timer.daemon = True
    timer.start()


def _stderr(line: str) -> None:
    os.write(sys.stderr.fileno(), (line + "\n").encode())


class Shutdown:
    """The stop request of one service process (``what``: ``ksched run informer``)."""

    def __init__(
        self,
        what: str,
        *,
        bound: float = STOP_BOUND,
        timer: Timer = _daemon_timer,
        write: Callable[[str], None] = _stderr,
        exit: Callable[[int], NoReturn] = os._exit,
    ) -> None:
        self.what = what
        self.requested = asyncio.Event()
        """Set once a signal asked the process to stop."""
        self._bound = bound
        self._timer = timer
        self._write = write
        self._exit = exit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._signal: int | None = None
        self._armed = False

    @property
    def stopped_by(self) -> int | None:
        """The signal that asked the process to stop (None until one did)."""
        return self._signal

    def install(self) -> None:
        """Take SIGTERM and SIGINT for this process; call from the running loop."""
        self._loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.on_signal)

    def on_signal(self, signum: int, _frame: FrameType | None = None) -> None:
        name = signal.Signals(signum).name
        if self._signal is not None:
            self._write(f"{self.what}: {name} while stopping: exiting now")
            self._exit(128 + signum)
        self._signal = signum
        self.arm()
        if self._loop is None:
            self.requested.set()
            return
        try:
            self._loop.call_soon_threadsafe(self._stop_requested, name)
        except RuntimeError:  # the loop is closed: the run is over, the watchdog is armed
            pass

    def arm(self) -> None:
        """Start the watchdog (once): the process ends ``bound`` seconds from now at the
        latest. Called on the first signal and whenever the run ends."""
        if not self._armed:
            self._armed = True
            self._timer(self._bound, self._expired)

    def _stop_requested(self, name: str) -> None:
        log.info("%s: %s: stopping (send it again to exit at once)", self.what, name)
        self.requested.set()

    def _expired(self) -> None:
        self._write(f"{self.what}: not stopped within {self._bound:g} s: exiting now")
        self._exit(EXIT_STUCK)
