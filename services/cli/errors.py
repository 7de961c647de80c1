"""How a ``ksched`` failure reaches the user: one line on stderr and a documented exit code.

``main`` catches whatever a command raises and asks :func:`explain` for the line and
the code; no command prints its own failures. The line names what failed and how to
fix it, and never shows a password (services.common.redact). ``ksched -v`` adds the
traceback; an internal error (a bug) always shows it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import msgspec

from services.cli.manifests import ManifestError
from services.common.bus import BusError
from services.common.eventlog.base import LogMismatchError, LogSequenceError
from services.common.redact import redact
from services.common.store.errors import store_failure
from services.framework.api.registry import ConfigError

OK, CHECK_FAILED, BAD_INPUT, UNREACHABLE, INTERNAL = 0, 1, 2, 3, 70
LEADERSHIP_LOST = CHECK_FAILED
"""A service that lost its leader lease (kube-scheduler's ``leaderelection lost``)."""
INTERRUPTED, TERMINATED = 130, 143
EXIT_CODES = (
    (OK, "success"),
    (
        CHECK_FAILED,
        "ran, and the answer is no (replay --check: a decision differs; queue: no view "
        "published); a service (run): it lost its leader lease (leaderelection lost)",
    ),
    (
        BAD_INPUT,
        "bad input: usage, a file that cannot be read or is invalid, a bad --config, "
        "a flag the command cannot honour",
    ),
    (UNREACHABLE, "RabbitMQ or Redis cannot be reached, or refused an operation"),
    (INTERNAL, "internal error, a bug in ksched (the traceback is printed: please report it)"),
    (INTERRUPTED, "interrupted (Ctrl-C), or a service stopped at once by a second SIGINT"),
    (
        TERMINATED,
        "a service stopped at once by a second SIGTERM (the first one stops it cleanly, "
        "exit 0), or a bench run stopped by SIGTERM before its report (after cleaning up)",
    ),
)
"""Every exit code of ``ksched`` and what it means, as ``ksched --help`` lists them."""


class Terminated(Exception):
    """A command SIGTERM stopped before it finished, after it cleaned up what it had
    made; the message is what follows ``ksched COMMAND: ``."""


class InputError(Exception):
    """Bad input the user can fix that no lower layer names (a flag the command cannot
    honour, a corrupt log); the message is what follows ``ksched COMMAND: ``."""


_NAMED_INPUT_ERRORS = (
    ManifestError,
    LogSequenceError,
    LogMismatchError,
    InputError,
    msgspec.DecodeError,
)
"""Bad input whose message names the file, document or field: shown as it is."""


@dataclass(frozen=True, slots=True)
class Failure:
    code: int
    line: str
    """The one line for stderr; empty when nothing needs saying (Ctrl-C)."""
    internal: bool = False
    """A bug: the traceback is shown even without ``-v``."""


def explain(error: BaseException, *, command: str, amqp_url: str, redis_url: str) -> Failure:
    """The exit code and the line for ``error``, raised by ``ksched COMMAND``."""
    where = f"ksched {command}"
    if isinstance(error, KeyboardInterrupt):
        return Failure(INTERRUPTED, "")
    if isinstance(error, Terminated):
        return Failure(TERMINATED, _one_line(f"{where}: {error}"))
    if isinstance(error, BusError):
        return _edge(where, "RabbitMQ", amqp_url, "--amqp-url / KSCHED_AMQP_URL", error)
    if store_failure(error) is not None:
        return _edge(where, "Redis", redis_url, "--redis-url / KSCHED_REDIS_URL", error)
    if isinstance(error, ConfigError):  # its message names the file, line and field
        return Failure(BAD_INPUT, _one_line(f"ksched: {error}"))
    if isinstance(error, _NAMED_INPUT_ERRORS):
        return Failure(BAD_INPUT, _one_line(f"{where}: {error}"))
    if isinstance(error, ConnectionError | TimeoutError) and error.filename is None:
        # A server that went away mid-operation (a stream's node restarting), not bad
        # input: a restart retries it.
        return Failure(UNREACHABLE, _one_line(f"{where}: {_reason(error)}"))
    if isinstance(error, OSError):
        if error.filename is not None:
            reason = error.strerror or str(error)
            return Failure(BAD_INPUT, _one_line(f"{where}: cannot open {error.filename}: {reason}"))
        return Failure(BAD_INPUT, _one_line(f"{where}: {_reason(error)}"))
    name = type(error).__name__
    return Failure(
        INTERNAL,
        _one_line(f"{where}: internal error: {name}: {error} (a bug: please report it)"),
        internal=True,
    )


def _edge(where: str, server: str, url: str, flags: str, error: BaseException) -> Failure:
    connecting = store_failure(error) == "unreachable" or any(
        isinstance(cause, OSError) for cause in _chain(error)
    )
    if connecting:
        errno_reason = any(isinstance(c, OSError) and (c.errno or 0) > 0 for c in _chain(error))
        hint = "is it running?" if errno_reason else "are the host, user and password right?"
        hint += f" see {flags}"
        line = f"{where}: cannot connect to {server} at {url}: {_reason(error)} ({hint})"
    else:
        line = f"{where}: {server} at {url} refused: {error} (see {flags})"
    return Failure(UNREACHABLE, _one_line(line))


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and what caused it, outermost first."""
    chain: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    return chain


def _reason(error: BaseException) -> str:
    """The innermost cause in words: ``connection refused``, ``name or service not known``,
    the broker's own refusal; else ``error`` itself."""
    for cause in reversed(_chain(error)):
        if not isinstance(cause, OSError):
            continue
        if cause.errno is not None and cause.errno > 0:
            return os.strerror(cause.errno).lower()
        if cause.strerror:
            return cause.strerror[:1].lower() + cause.strerror[1:]
        if cause.args and isinstance(cause.args[0], str):
            return cause.args[0]
    return str(error)


def _one_line(text: str) -> str:
    return redact(" ".join(text.split()))


__all__ = ["EXIT_CODES", "Failure", "InputError", "explain"]
