"""One server process of the HA deployment: started in a session of its own, its output
in a log file, readiness read from that log (bounded), stopped with SIGTERM to its whole
process group (SIGKILL after a bound)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

READY_TIMEOUT = 120.0
"""Seconds a server may take to say it is ready."""
STOP_TIMEOUT = 20.0
"""Seconds a process group has after SIGTERM before it is killed."""
POLL = 0.2


class HAError(Exception):
    """The deployment cannot go on: one line that says why."""


class Child:
    """A process of the deployment, restartable with the same command and environment."""

    def __init__(
        self, name: str, command: Sequence[str], env: Mapping[str, str], log: Path
    ) -> None:
        self.name = name
        self.command = list(command)
        self.env = dict(env)
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._offset = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self._offset = out.tell()
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starts += 1

    def output(self) -> str:
        """What the current process wrote so far."""
        with contextlib.suppress(OSError), self.log.open("rb") as file:
            file.seek(self._offset)
            return file.read().decode(errors="replace")
        return ""

    def wait_ready(self, *marks: str, timeout: float = READY_TIMEOUT) -> None:
        """Return once the current process wrote a line with one of ``marks``; HAError
        when it exits first or says nothing of the kind within ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.output()
            if any(mark in text for mark in marks):
                return
            if not self.running:
                raise HAError(f"{self.name} exited before it was ready: {_tail(text)}")
            if time.monotonic() > deadline:
                raise HAError(f"{self.name} was not ready within {timeout:g} s: {_tail(text)}")
            time.sleep(POLL)

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.process is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)

    def kill(self) -> None:
        """SIGKILL the process group (also what is left of it once its leader exited)
        and reap the leader."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM the process group; SIGKILL it if it is still there after ``timeout``."""
        if self.process is None:
            return
        self.signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        self.signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # what the leader left behind


def _tail(text: str, lines: int = 8) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:]) or "(no output)"


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_block(size: int, start: int = 20000, stop: int = 30000, step: int = 37) -> int:
    """The first port P from ``start`` such that P .. P+size-1 are all free."""
    for base in range(start, stop, step):
        if all(port_free(base + i) for i in range(size)):
            return base
    raise HAError(f"no {size} free ports in a row between {start} and {stop}")
