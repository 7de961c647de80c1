"""The event log in a file: one JSON LogEntry per line, fsynced on every append.

Open it with ``FileEventLog(path)`` (blocking: it scans the file) or, from async code,
``await FileEventLog.open(path)`` (the same scan in a worker thread). The file is created
if missing, owner-only (0600; an existing log is tightened to 0600), and so is every
directory on its path that does not exist yet (0700). Opening recovers from a crash
mid-append:

- a last line without its newline that does not parse (torn by the crash) is truncated
  away; the append that wrote it never returned, so no one has seen that entry;
- a last line without its newline that does parse (a hand-written log, say) is kept and
  given its newline;
- any other line that does not parse, or a seq that does not continue its predecessor
  (the first may be any: it follows a snapshot), raises: the log is corrupt and needs a
  human. Blank lines are ignored.

An append that fails (``write`` or ``fsync`` raises: a full disk, an I/O error) raises
:class:`LogWriteError` naming the file, the seqs and the cause, and leaves nothing
behind: what it wrote is truncated away at once, or, if even that fails, before the next
append (and by the recovery above on open). After a failed fsync the kernel may have
dropped the written pages, so the whole append is written again, never trusted.
The file operations go through a :class:`LogFiles` (``os`` by default), so tests can
inject a full disk.

``read`` streams from the file with its own handle, up to the entries appended when it
was called; a sparse index of line offsets (one every 1024 entries) lets it start near
``after`` instead of at the top.

One writer at a time, enforced: every append holds an exclusive ``flock`` on the file
while it checks that the file still ends where this writer left it (another process
that appended since makes it :class:`LogFencedError`: this writer's view is stale), and,
once the writer has :meth:`claim`-ed the log with a lease's fencing token, that no
higher token is recorded in the sidecar ``PATH.fence``. So a second informer started
over the same file, or a deposed leader that wakes up after its successor claimed the
log, is refused before it writes a byte. The lock is taken on a stable sidecar,
``PATH.lock``, not on the log, because retention replaces the log's file: a writer
whose handle still names the replaced file is stale as well, and refused.

Snapshots and retention: :meth:`write_snapshot` keeps a snapshot durably in
``PATH.snapshots/<seq>.snap`` (:mod:`._snapfiles`); :meth:`retain` drops the entries a
snapshot covers by rewriting the log without them: the entries kept are copied to a
new file while appends go on, then, under the lock and as the writer, those appended
meanwhile; the new file is fsynced and renamed over the old. A log whose first entry
is not seq 1 therefore opens: its first seq follows a snapshot; a log left empty by
retention ends at its newest snapshot's seq.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import errno
import fcntl
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

import anyio.to_thread
import msgspec

from contracts.events import LogEntry
from services.common.eventlog import _snapfiles
from services.common.eventlog._sequence import check_sequence
from services.common.eventlog._snapfiles import fsync_dir, snapshot_dir
from services.common.eventlog.base import LogFencedError, LogSequenceError, LogWriteError
from services.common.eventlog.encoded import entry_lines

_INDEX_EVERY = 1024
_FILE_MODE = 0o600
"""The log holds every object users sent (annotations, env of pods): owner only."""
_DIR_MODE = 0o700


class LogFiles(Protocol):
    """The file operations an append makes (``os``'s, unless a test injects faults)."""

    def write(self, fd: int, data: memoryview, /) -> int: ...

    def fsync(self, fd: int, /) -> None: ...

    def ftruncate(self, fd: int, length: int, /) -> None: ...


class _OSFiles:
    def write(self, fd: int, data: memoryview, /) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int, /) -> None:
        os.fsync(fd)

    def ftruncate(self, fd: int, length: int, /) -> None:
        os.ftruncate(fd, length)


OS_FILES: LogFiles = _OSFiles()


class FileEventLog:
    """EventLog on a local file. One writer per file: the informer."""

    def __init__(self, path: str | os.PathLike[str], *, files: LogFiles = OS_FILES) -> None:
        self.path = Path(path).absolute()
        """The file, absolute: the one opened, whatever the working directory later."""
        self._files = files
        self._torn = False
        """A failed append could not cut its partial line: cut it before the next one."""
        self._decoder = msgspec.json.Decoder(LogEntry)
        self._lock = asyncio.Lock()
        self._retaining = asyncio.Lock()
        """One retention at a time (it copies without holding ``_lock``)."""
        _make_private_dirs(self.path.parent)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        """The sidecar every writer flocks (stable: retention replaces the log's file)."""
        self.snapshots = snapshot_dir(self.path)
        """The directory of the snapshots (``PATH.snapshots``)."""
        self.fence_path = self.path.with_name(self.path.name + ".fence")
        """The sidecar holding the highest fencing token that claimed the log."""
        self._fence = 0
        """The token this writer claimed the log with (0: never claimed)."""
        self.on_fsync: Callable[[float], None] | None = None
        """Told each fsync's duration in seconds (``ksched_event_log_fsync_duration_seconds``)."""
        try:
            self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
        except OSError as error:  # named as the log's: the user gave that path
            raise type(error)(
                error.errno, f"{error.strerror} ({self.lock_path.name})", str(self.path)
            ) from error
        self._fd = -1
        try:
            with _flocked(self._lock_fd):
                # Under the lock: a writer mid-append in another process has a partial
                # last line that is not torn, and must not be cut.
                self._open_file()
        except BaseException:
            os.close(self._lock_fd)
            if self._fd >= 0:
                os.close(self._fd)
            raise

    def _open_file(self) -> None:
        """(Re)open the file at :attr:`path` and read it whole (the lock held)."""
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, _FILE_MODE)
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = fd
        os.fchmod(self._fd, _FILE_MODE)  # a log created before (or by hand) is tightened
        if created:
            fsync_dir(self.path.parent)
        self._inode = os.fstat(self._fd).st_ino
        self._last_seq = 0
        self._first_seq = 0
        """The seq of the first entry in the file (0 while it holds none)."""
        self._size = 0
        self._index: list[tuple[int, int]] = []
        """(seq, offset of its line) for the first entry and every seq ≡ 1 (mod 1024)."""
        self._scan(0)
        if not self._first_seq:  # emptied by retention: it ends where its snapshot does
            self._last_seq = max(_snapfiles.seqs(self.snapshots), default=0)

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str], *, files: LogFiles = OS_FILES
    ) -> FileEventLog:
        """Open (or create) the log at ``path`` without blocking the event loop."""
        return await anyio.to_thread.run_sync(lambda: cls(path, files=files))

    async def connect(self) -> None:
        """Nothing: the file was opened and scanned by the constructor."""

    def last_seq(self) -> int:
        return self._last_seq

    @property
    def size_bytes(self) -> int:
        """The log file's size (``ksched_event_log_bytes``)."""
        return self._size

    async def append(
        self, events: Sequence[LogEntry], lines: Sequence[bytes] | None = None
    ) -> None:
        """Write every line, then flush and fsync once; durable when it returns."""
        if not events:
            return
        async with self._lock:
            self._check_open()
            check_sequence(self._last_seq, events)
            lines = [line + b"\n" for line in lines or entry_lines(events)]
            try:
                await anyio.to_thread.run_sync(self._locked_write, b"".join(lines))
            except LogFencedError:
                raise
            except OSError as error:
                code = error.errno or errno.EIO
                cause = error.strerror or str(error) or os.strerror(code)
                raise LogWriteError(
                    code,
                    f"event log {self.path}: appending seq {events[0].seq}..{events[-1].seq} "
                    f"failed: {cause} (nothing of it was written)",
                ) from error
            offset = self._size
            for event, line in zip(events, lines, strict=True):
                self._note(event.seq, offset)
                offset += len(line)
            self._size = offset
            self._last_seq = events[-1].seq

    def read(self, after: int = 0) -> AsyncIterator[LogEntry]:
        """Entries with seq > ``after`` that were appended before this call, in order."""
        if after >= self._last_seq or not self._first_seq:
            return _pace(iter(()))
        return _pace(self._stream(after, self._last_seq))

    async def claim(self, fence: int) -> None:
        """Record ``fence`` in the sidecar (refused if a higher token is there) and read
        what earlier writers appended since this log was opened."""
        async with self._lock:
            await anyio.to_thread.run_sync(self._claim, fence)
            self._fence = fence

    def _claim(self, fence: int) -> None:
        with _flocked(self._lock_fd):
            recorded = self._recorded_fence()
            if recorded > fence:
                raise LogFencedError(
                    f"event log {self.path}: claimed by fencing token {recorded}, "
                    f"not {fence}: another informer is the log's writer"
                )
            fd = os.open(self.fence_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _FILE_MODE)
            try:
                os.write(fd, b"%d\n" % fence)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._torn = False  # a tail torn by the last writer is cut by the scan
            if self._replaced():  # an earlier writer's retention rewrote it: read it anew
                self._open_file()
            else:
                self._scan(self._size)

    def _replaced(self) -> bool:
        """Whether :attr:`path` names another file than this writer's handle."""
        try:
            return os.stat(self.path).st_ino != self._inode
        except FileNotFoundError:
            return True

    def _recorded_fence(self) -> int:
        try:
            text = self.fence_path.read_bytes()
        except FileNotFoundError:
            return 0
        try:
            return int(text.strip() or b"0")
        except ValueError as error:
            raise ValueError(f"{self.fence_path}: not a fencing token: {text[:40]!r}") from error

    def _check_writer(self) -> None:
        """LogFencedError unless this writer is still the log's (the lock held)."""
        if self._fence:
            recorded = self._recorded_fence()
            if recorded > self._fence:
                raise LogFencedError(
                    f"event log {self.path}: fencing token {self._fence} was superseded "
                    f"by {recorded}: this informer is no longer the log's writer"
                )
        if self._replaced():
            raise LogFencedError(
                f"event log {self.path}: another writer replaced the file (retention): "
                "this informer is no longer the log's writer"
            )
        if not self._torn and os.fstat(self._fd).st_size != self._size:
            raise LogFencedError(
                f"event log {self.path}: another writer appended to it (it is "
                f"{os.fstat(self._fd).st_size} bytes, this writer left it at "
                f"{self._size}): this informer is no longer the log's writer"
            )

    def _locked_write(self, data: bytes) -> None:
        """:meth:`_write` under the lock, once this writer is known to be the one."""
        with _flocked(self._lock_fd):
            self._check_writer()
            self._write(data)

    async def write_snapshot(self, seq: int, body: bytes) -> None:
        """Keep ``body``, the projection at ``seq``, in ``PATH.snapshots/<seq>.snap``."""
        if not 0 < seq <= self._last_seq:
            raise ValueError(
                f"event log {self.path}: no snapshot at seq {seq}: it ends at {self._last_seq}"
            )
        await anyio.to_thread.run_sync(
            _snapfiles.write, self.snapshots, seq, body, _FILE_MODE, _DIR_MODE
        )

    async def latest_snapshot(self) -> tuple[int, bytes] | None:
        return await anyio.to_thread.run_sync(_snapfiles.read_newest, self.snapshots)

    async def retain(self, covered: int) -> None:
        """Rewrite the log without the entries with seq ≤ ``covered``; ``covered`` may
        not pass the newest snapshot. The entries kept are copied to a new file while
        appends go on; those appended meanwhile are copied under the lock, as this
        log's writer, and the new file is renamed over the old."""
        async with self._retaining:
            async with self._lock:
                self._check_open()
                newest = max(_snapfiles.seqs(self.snapshots), default=0)
                if covered > newest:
                    raise ValueError(
                        f"event log {self.path}: cannot drop the entries up to seq {covered}: "
                        f"the newest snapshot covers seq {newest}"
                    )
                if not self._first_seq or covered < self._first_seq:
                    return
                inode, upto = self._inode, self._size
                cut = await anyio.to_thread.run_sync(self._offset_after, covered)
            temporary = self.path.with_name(f"{self.path.name}.retain.{os.getpid()}")
            try:
                await anyio.to_thread.run_sync(self._copy, temporary, inode, cut, upto)
                async with self._lock:
                    self._check_open()
                    if self._inode != inode:  # a claim read the log anew meanwhile
                        return
                    fd = await anyio.to_thread.run_sync(self._replace, temporary, upto)
                    # The new state is taken here, in the loop's thread, at once: a read
                    # that opens the new file before it sees another inode and finds its
                    # way alone.
                    os.close(self._fd)
                    self._fd, self._inode = fd, os.fstat(fd).st_ino
                    self._cut(covered, cut)
            finally:
                temporary.unlink(missing_ok=True)

    def _cut(self, covered: int, cut: int) -> None:
        """The state of the file once its first ``cut`` bytes (seqs ≤ covered) are gone."""
        kept = [(seq, offset - cut) for seq, offset in self._index if seq > covered]
        self._size -= cut
        if covered >= self._last_seq:
            self._index, self._first_seq = [], 0
            return
        if not kept or kept[0][0] != covered + 1:
            kept.insert(0, (covered + 1, 0))
        self._index, self._first_seq = kept, covered + 1

    def _copy(self, temporary: Path, inode: int, cut: int, upto: int) -> None:
        """Copy bytes ``cut`` to ``upto`` of the log (the file with ``inode``) to
        ``temporary``, appends going on meanwhile."""
        with self.path.open("rb") as old:
            if os.fstat(old.fileno()).st_ino != inode:
                raise LogFencedError(
                    f"event log {self.path}: another writer replaced the file (retention): "
                    "this informer is no longer the log's writer"
                )
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _FILE_MODE)
            with os.fdopen(fd, "wb") as new:
                old.seek(cut)
                _copy_bytes(old, new, upto - cut)

    def _replace(self, temporary: Path, upto: int) -> int:
        """Under the lock, as the writer: add what was appended after byte ``upto`` to
        ``temporary``, make it durable and rename it over the log; its new handle."""
        with _flocked(self._lock_fd):
            self._check_writer()
            with self.path.open("rb") as old, temporary.open("ab") as new:
                old.seek(upto)
                _copy_bytes(old, new, self._size - upto)
                new.flush()
                os.fsync(new.fileno())
            os.rename(temporary, self.path)
            fsync_dir(self.path.parent)
            for left in self.path.parent.glob(f"{self.path.name}.retain.*"):
                left.unlink(missing_ok=True)  # a crashed retention's copy
            return os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def _offset_after(self, covered: int) -> int:
        """The byte offset of the first line with seq > ``covered`` (its end if none)."""
        start = bisect.bisect_right(self._index, covered + 1, key=lambda item: item[0]) - 1
        seq, offset = self._index[max(start, 0)]
        with self.path.open("rb") as f:
            f.seek(offset)
            while seq <= covered and offset < self._size:
                line = f.readline()
                if not line:
                    break
                offset += len(line)
                if line.strip():
                    seq += 1
        return offset

    def _check_open(self) -> None:
        if self._fd < 0:
            raise ValueError(f"{self.path}: the log is closed")

    async def close(self) -> None:
        async with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                os.close(self._lock_fd)
                self._fd = -1

    def _stream(self, after: int, upto: int) -> Iterator[LogEntry]:
        with self.path.open("rb") as f:
            if os.fstat(f.fileno()).st_ino == self._inode:
                if not self._index:
                    return
                start = bisect.bisect_right(self._index, after + 1, key=lambda item: item[0])
                seq, offset = self._index[max(start - 1, 0)]
            else:  # replaced by retention since the call: its lines say where they are
                seq, offset = 0, 0
            f.seek(offset)
            end = self._size if seq else 1 << 62
            while offset < end:
                line = f.readline()
                if not line:
                    return  # truncated under us: nothing more to read
                offset += len(line)
                if not line.strip():
                    continue
                if not seq:
                    entry = self._decoder.decode(line)
                    seq = entry.seq
                    if after < seq <= upto:
                        yield entry
                elif seq > upto:
                    return
                elif seq > after:
                    yield self._decoder.decode(line)
                seq += 1

    def _write(self, data: bytes) -> None:
        files = self._files
        if self._torn:
            files.ftruncate(self._fd, self._size)
            self._torn = False
        try:
            view = memoryview(data)
            while view:
                view = view[files.write(self._fd, view) :]
            began = time.perf_counter()
            files.fsync(self._fd)
            if self.on_fsync is not None:
                self.on_fsync(time.perf_counter() - began)
        except BaseException:
            try:
                files.ftruncate(self._fd, self._size)  # never leave half an append behind
            except OSError:
                self._torn = True
            raise

    def _note(self, seq: int, offset: int) -> None:
        if not self._first_seq:
            self._first_seq = seq
            self._index.append((seq, offset))
        elif seq % _INDEX_EVERY == 1:
            self._index.append((seq, offset))

    def _scan(self, offset: int) -> None:
        """Read the entries from byte ``offset`` (a line's start) to the end: all of the
        file when it is opened, what other writers appended when it is claimed."""
        whole = offset == 0
        with self.path.open("rb") as f:
            f.seek(offset)
            for number, line in enumerate(f, start=1):
                where = f"{self.path}:{number}" if whole else f"{self.path} (byte {offset})"
                if line.strip():
                    try:
                        event = self._decoder.decode(line)
                    except msgspec.DecodeError as exc:
                        if line.endswith(b"\n"):
                            raise ValueError(f"{where}: corrupt entry: {exc}") from exc
                        os.ftruncate(self._fd, offset)  # torn by a crash mid-append
                        os.fsync(self._fd)
                        break
                    # The first entry of a file may follow a snapshot (retention).
                    if event.seq != self._last_seq + 1 and (self._last_seq or event.seq < 1):
                        raise LogSequenceError(f"{where}: seq {event.seq} follows {self._last_seq}")
                    self._note(event.seq, offset)
                    self._last_seq = event.seq
                offset += len(line)
                if not line.endswith(b"\n"):  # the last line: give it its newline
                    os.write(self._fd, b"\n")
                    os.fsync(self._fd)
                    offset += 1
                    break  # the reader would see the newline just written as a line
        self._size = offset


def _copy_bytes(source: BinaryIO, target: BinaryIO, count: int) -> None:
    """Copy ``count`` bytes from ``source``'s position to ``target``."""
    while count > 0:
        chunk = source.read(min(count, 1 << 20))
        if not chunk:
            raise OSError(errno.EIO, f"the event log ended {count} bytes early while copied")
        target.write(chunk)
        count -= len(chunk)


@contextlib.contextmanager
def _flocked(fd: int) -> Iterator[None]:
    """An exclusive ``flock`` on ``fd`` (blocking) for the ``with`` block."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


async def _pace(entries: Iterator[LogEntry]) -> AsyncIterator[LogEntry]:
    """``entries`` one by one, letting the rest of the process run now and then."""
    for count, entry in enumerate(entries, start=1):
        yield entry
        if count % _INDEX_EVERY == 0:
            await asyncio.sleep(0)


def _make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and any missing parent owner-only (0700, whatever the umask);
    directories that exist already (``/tmp``, a shared ``var/``) are left as they are."""
    if directory.is_dir():
        return
    _make_private_dirs(directory.parent)
    try:
        directory.mkdir(mode=_DIR_MODE)
    except FileExistsError:
        return  # created under us: not ours to change
    os.chmod(directory, _DIR_MODE)  # mkdir's mode is masked by the umask
