"""A file log's snapshots: ``PATH.snapshots/<seq>.snap``, each written whole or not at
all (a temporary file, fsynced, renamed, the directory fsynced). The newest
:data:`KEEP` are kept; what a snapshot holds is not this module's business (it is
:mod:`services.common.eventlog.snapshot`'s)."""

from __future__ import annotations

import os
from pathlib import Path

SUFFIX = ".snap"
KEEP = 2
"""Snapshots kept: the newest, and the one before it (should the newest be unreadable,
the log still holds everything after the one before, for a human to rebuild from)."""


def snapshot_dir(path: Path) -> Path:
    """The directory of the log at ``path``'s snapshots."""
    return path.with_name(path.name + ".snapshots")


def seqs(directory: Path) -> list[int]:
    """The seqs of the snapshots in ``directory``, ascending (none if it is missing);
    files of other names (a temporary file left by a crash) are not snapshots."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        stem, dot, suffix = name.partition(".")
        if dot and "." + suffix == SUFFIX and stem.isdigit():
            found.append(int(stem))
    return sorted(found)


def write(directory: Path, seq: int, body: bytes, mode: int, dir_mode: int) -> None:
    """Write the snapshot at ``seq`` durably, then drop all but the newest KEEP."""
    if not directory.is_dir():
        directory.mkdir(mode=dir_mode, exist_ok=True)
        os.chmod(directory, dir_mode)
        fsync_dir(directory.parent)
    final = directory / f"{seq}{SUFFIX}"
    temporary = directory / f"{seq}{SUFFIX}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temporary, final)
    fsync_dir(directory)
    for old in seqs(directory)[:-KEEP]:
        (directory / f"{old}{SUFFIX}").unlink(missing_ok=True)


def read_newest(directory: Path) -> tuple[int, bytes] | None:
    """The newest snapshot's seq and bytes, or None when there is none."""
    found = seqs(directory)
    if not found:
        return None
    return found[-1], (directory / f"{found[-1]}{SUFFIX}").read_bytes()


def fsync_dir(directory: Path) -> None:
    """Make a directory's entries durable (POSIX; a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
