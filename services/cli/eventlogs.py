"""Opening the event log a spec names with the process's settings (a file, ``memory://``
or ``stream://NAME`` on the ``KSCHED_AMQP_URL`` brokers), and ``ksched log copy``,
which moves a log to another backend: a file log into a stream, say."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

from services.common.eventlog import EventLog, StreamOptions, is_stream, open_event_log
from services.common.settings import Settings

COPY_CHUNK = 1024
"""Entries per append of a copy (one confirm round trip each on a stream)."""
NOT_A_FILE = "not a regular file (an event log is a file of JSON lines, or stream://NAME)"
"""Why a path that exists but is neither a file nor a directory (a device, a pipe) is
not taken as an event log."""


def stream_options(settings: Settings) -> StreamOptions:
    return StreamOptions(
        amqp_url=settings.amqp_url,
        namespace=settings.namespace,
        tls=settings.tls,
        max_age=settings.informer.stream_max_age,
        max_length_bytes=settings.informer.stream_max_length_bytes,
    )


def open_log(spec: str, settings: Settings, *, must_exist: bool = False) -> EventLog:
    """The log ``spec`` names, not connected yet (``await log.connect()``).
    ``must_exist``: a file that does not exist is FileNotFoundError (opening would
    create it); a directory or a device is an OSError that says what it is."""
    if must_exist and not is_stream(spec) and not spec.startswith("memory://"):
        path = Path(spec)
        if not path.is_file():  # one stat for the usual case, a file
            if path.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), spec)
            if path.exists():
                raise OSError(errno.EINVAL, NOT_A_FILE, spec)
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), spec)
    return open_event_log(spec, stream=stream_options(settings))


async def copy_log(source: EventLog, target: EventLog) -> tuple[int, int]:
    """Append to ``target`` the entries of ``source`` it does not hold yet (those after
    its last seq: a copy that was interrupted continues). A source whose head retention
    dropped starts an empty stream at its newest snapshot. Returns (first, last) seq
    copied, (0, 0) when there was nothing to copy."""
    await source.connect()
    await target.connect()
    after = target.last_seq()
    if after == 0:
        after = await _begin(source, target)
    first, last = 0, 0
    chunk = []
    async for entry in source.read(after):
        chunk.append(entry)
        if len(chunk) == COPY_CHUNK:
            await target.append(chunk)
            first, last, chunk = first or chunk[0].seq, chunk[-1].seq, []
    if chunk:
        await target.append(chunk)
        first, last = first or chunk[0].seq, chunk[-1].seq
    return first, last


async def _begin(source: EventLog, target: EventLog) -> int:
    """Where an empty ``target`` starts: at seq 0, or, when retention dropped the
    source's head, at the source's newest snapshot (which the target takes over)."""
    head = await anext(aiter(source.read(0)), None)
    if head is None or head.seq == 1:
        return 0
    snapshot = await source.latest_snapshot()
    begin_at = getattr(target, "begin_at", None)
    if snapshot is None or begin_at is None:
        raise ValueError(
            f"the source's entries before seq {head.seq} were dropped by its retention: "
            "copy it into a stream (stream://NAME), which starts at its newest snapshot"
        )
    await begin_at(*snapshot)
    return snapshot[0]


async def log_copy_command(source_spec: str, target_spec: str, settings: Settings) -> int:
    """``ksched log copy SOURCE TARGET``: say what was copied, on stderr."""
    source = open_log(source_spec, settings, must_exist=True)
    target = open_log(target_spec, settings)
    try:
        first, last = await copy_log(source, target)
    finally:
        await source.close()
        await target.close()
    if last:
        print(f"copied seq {first}..{last} from {source_spec} to {target_spec}", file=sys.stderr)
    else:
        print(f"{target_spec} holds every entry of {source_spec} already", file=sys.stderr)
    return 0
