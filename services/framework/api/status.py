"""``Status``: what a plugin tells the framework, with upstream's codes and meanings."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace


class Code(enum.IntEnum):
    """Upstream's ``framework.Code``, same order and values."""

    Success = 0
    """The plugin ran and the pod may proceed (a ``None`` status upstream)."""
    Error = 1
    """An internal error: the attempt fails and the pod backs off; never about fit."""
    Unschedulable = 2
    """The pod does not fit, but preemption (PostFilter) might make it fit."""
    UnschedulableAndUnresolvable = 3
    """The pod does not fit and preempting pods on this node would not help."""
    Wait = 4
    """Permit only: hold the pod until a plugin allows or rejects it, or a timeout."""
    Skip = 5
    """PreFilter / PreScore: this plugin's Filter / Score has nothing to do for the pod."""
    Pending = 6
    """The pod must wait for something outside the scheduler (not a fit failure)."""


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's verdict. ``reasons`` are the human strings that end up in the
    FailedScheduling message; ``plugin`` names the plugin that returned it (the
    framework fills it in), so the queue knows which events can requeue the pod."""

    code: Code = Code.Success
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def new(cls, code: Code, *reasons: str) -> Status:
        return cls(code, reasons)

    def is_success(self) -> bool:
        return self.code == Code.Success

    def is_skip(self) -> bool:
        return self.code == Code.Skip

    def is_wait(self) -> bool:
        return self.code == Code.Wait

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod cannot be
        placed now, which is not an error (``IsRejected`` upstream)."""
        return self.code in (Code.Unschedulable, Code.UnschedulableAndUnresolvable, Code.Pending)

    def message(self) -> str:
        """The reasons joined by ``", "`` (``Status.Message()``)."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return replace(self, plugin=plugin)

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message()}" if self.reasons else self.code.name


SUCCESS = Status()
SKIP = Status(Code.Skip)


class StatusError(Exception):
    """Raised by a plugin method that returns data rather than a Status, to report an
    internal error (``Code.Error``) with its message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.status = Status(Code.Error, (message,))


def as_status(err: BaseException) -> Status:
    """``framework.AsStatus``: an error as an Error status."""
    if isinstance(err, StatusError):
        return err.status
    return Status(Code.Error, (str(err) or type(err).__name__,))
