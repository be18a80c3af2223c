"""Files under `.workspace-mcp/`: locked, atomic, contained, bounded.

The state directory lives inside the workspace, so the agent can write there too: a
symlink planted as `.workspace-mcp/changes` must not turn a state write into a write
outside the root. Every state path therefore goes through `locate()` like a tool path.

Several server processes may serve one workspace at once (a desktop client's stdio
server and an HTTP server). Read-modify-write sequences and appends hold an exclusive
`flock` on `.workspace-mcp/.lock` (plus a thread lock, since flock between threads of
one process is only reliable across separate open file descriptions), so no update
is lost and no JSON line interleaves.

Every state file is opened without following a symlink and without blocking, and
must then be a regular file with exactly one link: a FIFO would hang every later call,
a hard link would send journal appends (or `recall` reads) to a file outside the
root. Anything else at a state file's name is reported once on stderr, removed (only
the name in our directory: a hard link's other names are untouched) and recreated.
The file tools cannot write under `.workspace-mcp/` at all (containment's write policy).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import posixpath
import re
import stat
import threading
from collections.abc import Callable, Iterator
from typing import Any

from . import limits, safejson
from .containment import Located, locate, parts_below
from .errors import (
    NotFoundError,
    OutsideWorkspaceError,
    TooLargeError,
    WorkspaceError,
    describe_os_error,
)
from .flock import LockBusyError, flock_bounded
from .limits import MAX_FILE_BYTES, MIB, STATE_DIR_NAME, STATE_READ_BYTES
from .osflags import NOFOLLOW_NONBLOCK
from .textio import atomic_write, kind_of
from .workspaces import Workspace

_warned: set[tuple[str, str]] = set()


def _warn_once(loc: Located, what: str) -> None:
    from .operator import say

    key = (loc.real_abs, what)
    if key not in _warned:
        _warned.add(key)
        say(f"{loc.real_abs}: was {what}, not a plain state file; replaced it with a new one")


def _unsafe(st: os.stat_result) -> str | None:
    """What is wrong with an opened state file, or None for a regular file with one link."""
    if not stat.S_ISREG(st.st_mode):
        return f"a {kind_of(st.st_mode)}"
    if st.st_nlink != 1:
        return f"a hard link ({st.st_nlink} names)"
    return None


def _discard(loc: Located, what: str) -> None:
    """Remove whatever sits at a state file's name (never following it) and say so."""
    _warn_once(loc, what)
    try:
        os.unlink(loc.name, dir_fd=loc.dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.EISDIR, errno.EPERM):  # Linux says EISDIR, POSIX EPERM
            raise
        raise WorkspaceError(
            f"{STATE_DIR_NAME}/{loc.name} is a directory; remove it to let the server use it"
        ) from None


def open_state(loc: Located, flags: int, *, create: bool) -> int | None:
    """An fd on a safe state file: regular, one link, reached without following links.

    Returns None when the file does not exist and `create` is false. A FIFO, socket,
    device, symlink or hard link at the name is discarded (and recreated if `create`).
    """
    for _ in range(3):  # a racing writer may plant something again; give up after that
        try:
            fd = os.open(loc.name, flags | NOFOLLOW_NONBLOCK, 0o600, dir_fd=loc.dir_fd)
        except FileNotFoundError:
            if not create:
                return None
            try:
                create_flags = flags | NOFOLLOW_NONBLOCK | os.O_CREAT | os.O_EXCL
                fd = os.open(loc.name, create_flags, 0o600, dir_fd=loc.dir_fd)
            except FileExistsError:
                continue
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                what = {errno.ELOOP: "a symlink", errno.ENXIO: "a FIFO or socket"}.get(
                    exc.errno or 0, "a directory"
                )
                _discard(loc, what)
                continue
            raise
        problem = _unsafe(os.fstat(fd))
        if problem is None:
            return fd
        os.close(fd)
        _discard(loc, problem)
    raise WorkspaceError(f"{STATE_DIR_NAME}/{loc.name} keeps being replaced; retry")


def _read_state(loc: Located) -> bytes | None:
    """A whole state file (bounded), or None when it does not exist (or was unsafe)."""
    fd = open_state(loc, os.O_RDONLY, create=False)
    if fd is None:
        return None
    try:
        if os.fstat(fd).st_size > MAX_FILE_BYTES:
            raise TooLargeError(f"{STATE_DIR_NAME}/{loc.name} is too large to read")
        chunks, position = [], 0
        while position <= MAX_FILE_BYTES:
            chunk = os.pread(fd, MIB, position)
            if not chunk:
                break
            chunks.append(chunk)
            position += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_thread_locks: dict[str, threading.RLock] = {}
_thread_locks_guard = threading.Lock()


def state_rel(ws: Workspace, *parts: str) -> str:
    """A state path as `locate()` takes it (relative to the base; absolute when unconfined)."""
    rel = "/".join((STATE_DIR_NAME, *parts))
    return rel if ws.confined else os.path.join(ws.state_dir, *parts)


def _state_prefix(ws: Workspace) -> tuple[str, ...]:
    return parts_below(ws, ws.state_dir)


def locate_state(
    ws: Workspace, *parts: str, create_parents: bool = False, follow_final: bool = False
) -> Located:
    """A state path located like any path, and then checked to really be in the state
    directory: protection follows the directory, not its name, so a `.workspace-mcp`
    (or a folder inside it) planted as a symlink to an ordinary folder is removed (the
    link only, said once) instead of being written through."""
    parts = tuple(p for part in parts for p in part.split("/") if p)
    prefix = _state_prefix(ws)
    for _ in range(3):
        try:
            loc = locate(
                ws, state_rel(ws, *parts), create_parents=create_parents, follow_final=follow_final
            )
        except OutsideWorkspaceError:
            _unlink_state_links(ws, parts)  # a link out of the root: replaced the same way
            continue
        if loc.real_parts[: len(prefix)] == prefix and (
            len(parts) <= 1 or _inside(loc.real_parts[len(prefix) :], parts)
        ):
            return loc
        loc.close()
        _unlink_state_links(ws, parts)
    raise WorkspaceError(f"{STATE_DIR_NAME} keeps being replaced by a link; remove it and retry")


def _inside(real: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether the directories of `parts` were walked as themselves (no link among them)."""
    return real[: len(parts) - 1] == parts[:-1]


def _unlink_state_links(ws: Workspace, parts: tuple[str, ...]) -> None:
    """Remove the first symlink among the state directory and its folders on `parts`."""
    for depth in range(len(parts)):
        try:
            loc = locate(ws, state_rel(ws, *parts[:depth]), follow_final=False)
        except WorkspaceError:
            return
        with loc:
            st = loc.lstat()
            if st is not None and stat.S_ISLNK(st.st_mode):
                _discard(loc, "a symlink")
                return


def has_state_dir(ws: Workspace) -> bool:
    """Whether `.workspace-mcp/` exists, asked through the containment walk (never by name)."""
    try:
        with locate(ws, state_rel(ws), follow_final=False) as loc:
            st = loc.lstat()
    except WorkspaceError:
        return False
    return st is not None and stat.S_ISDIR(st.st_mode)


def ensure_state_dir(ws: Workspace) -> None:
    """Create `.workspace-mcp/` and its own `.gitignore` (`*`) on first use, contained.

    The repository's own `.gitignore` is never touched; O_EXCL means two servers racing
    on a fresh workspace do not both write the file.
    """
    with locate_state(ws, ".gitignore", create_parents=True) as loc:
        if loc.lstat() is not None:
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(loc.name, flags, 0o644, dir_fd=loc.dir_fd)
        except FileExistsError:
            return
        try:
            os.write(fd, b"*\n")
        finally:
            os.close(fd)


def _thread_lock(key: str) -> threading.RLock:
    with _thread_locks_guard:
        lock = _thread_locks.get(key)
        if lock is None:
            lock = _thread_locks[key] = threading.RLock()
        return lock


class StateBusyError(WorkspaceError):
    """The state lock stayed held past STATE_LOCK_WAIT_SECONDS."""


def _busy(holder: str, name: str = ".lock") -> StateBusyError:
    return StateBusyError(
        f"the workspace state ({STATE_DIR_NAME}/{name}) has been held by {holder} for over "
        f"{limits.STATE_LOCK_WAIT_SECONDS:g} s; retry when it is done"
    )


@contextlib.contextmanager
def state_lock(ws: Workspace, name: str = ".lock") -> Iterator[None]:
    """Exclusive across threads and processes for this workspace's state; waited for at
    most STATE_LOCK_WAIT_SECONDS (StateBusyError naming the holder past that). Another
    `name` is a separate lock for one small record that is updated on reads too (what
    each session has seen), so those never wait behind the journal.

    The lock file is a state file like any other: a symlink or hard link planted at its
    name is replaced, never followed (a followed one truncated or locked a workspace
    file, or left the root and so turned the journal off)."""
    ensure_state_dir(ws)
    thread_lock = _thread_lock(ws.state_dir if name == ".lock" else f"{ws.state_dir}/{name}")
    if not thread_lock.acquire(timeout=limits.STATE_LOCK_WAIT_SECONDS):
        raise _busy("another call of this server", name)
    try:
        with _lock_file(ws, name) as fd:
            try:
                flock_bounded(fd)
            except LockBusyError as exc:
                raise _busy(exc.holder, name) from None
            yield
    finally:
        thread_lock.release()


@contextlib.contextmanager
def _lock_file(ws: Workspace, name: str = ".lock") -> Iterator[int]:
    """An fd on `.workspace-mcp/<name>`, opened like every state file; closing it releases
    any flock taken on it."""
    with locate_state(ws, name, create_parents=True) as loc:
        fd = open_state(loc, os.O_RDWR, create=True)
    assert fd is not None
    try:
        yield fd
    finally:
        os.close(fd)


def try_state_lock(ws: Workspace) -> bool:
    """Whether the state lock can be taken right now (it is released at once); a state
    that cannot be used at all raises its one-sentence WorkspaceError. Never blocks:
    callers on an event loop wait for a busy lock with `state_lock` in a thread."""
    ensure_state_dir(ws)
    thread_lock = _thread_lock(ws.state_dir)
    if not thread_lock.acquire(blocking=False):
        return False
    try:
        with _lock_file(ws) as fd:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
        return True
    finally:
        thread_lock.release()


@contextlib.contextmanager
def _existing(ws: Workspace, *parts: str) -> Iterator[Located | None]:
    """The located state file, or None when it (or its directory) does not exist yet."""
    try:
        loc = locate_state(ws, *parts)
    except NotFoundError:
        yield None
        return
    with loc:
        yield loc if loc.lstat() is not None else None


def read_json(ws: Workspace, *parts: str) -> Any:
    """Parsed JSON, None if the file is missing; a one-sentence error naming it if corrupt."""
    with _existing(ws, *parts) as loc:
        data = None if loc is None else _read_state(loc)
    if data is None:
        return None
    try:
        return safejson.loads(data)
    except ValueError:
        raise WorkspaceError(
            f"{STATE_DIR_NAME}/{'/'.join(parts)} is corrupted (not valid JSON)"
        ) from None


# Framed records: small state files rewritten in place (an atomic rename costs ~0.3 ms
# on ext4, an in-place write ~5 us) by holders of a lock, read without it. The first
# line carries the payload's length and digest, so a read that races a write (or a
# torn write after a crash) is recognised as such, never parsed as something else.
_FRAME = re.compile(rb"\Aawm1 ([0-9a-f]{32}) ([0-9]{1,9})\n")


class TornRecordError(WorkspaceError):
    """A framed record's payload does not match its header (mid-write or damaged)."""


def read_framed(ws: Workspace, *parts: str) -> tuple[str, bytes] | None:
    """(digest, payload) of a framed record, None if it does not exist; TornRecordError
    if it is being written or damaged (read it again under the writers' lock)."""
    with _existing(ws, *parts) as loc:
        return None if loc is None else read_framed_at(loc)


def read_framed_at(loc: Located) -> tuple[str, bytes] | None:
    """read_framed() of a located record (one walk serves a directory's records)."""
    data = _read_state(loc)
    if data is None or data == b"":
        return None
    head = _FRAME.match(data)
    payload = data[head.end() :] if head else b""
    if head is None or len(payload) != int(head[2]) or _frame_digest(payload) != head[1]:
        raise TornRecordError(f"{loc.display} is damaged")
    return head[1].decode(), payload


def write_framed_at(loc: Located, payload: bytes) -> None:
    """Rewrite a located framed record in place; the caller holds the lock its writers
    share."""
    data = b"awm1 %s %d\n" % (_frame_digest(payload), len(payload)) + payload
    fd = open_state(loc, os.O_RDWR, create=True)
    assert fd is not None
    try:
        view, offset = memoryview(data), 0
        while offset < len(data):
            offset += os.pwrite(fd, view[offset:], offset)
        os.ftruncate(fd, len(data))
    except OSError as exc:
        raise WorkspaceError(describe_os_error(exc, loc.display)) from None
    finally:
        os.close(fd)


def sibling(loc: Located, name: str) -> Located:
    """Another entry of the directory `loc` is in, sharing its fd: never close it (the
    original's context closes the fd for both)."""
    return dataclasses.replace(
        loc, name=name, display=posixpath.join(posixpath.dirname(loc.display), name)
    )


def _frame_digest(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=16).hexdigest().encode()


def _replace(loc: Located, data: bytes) -> None:
    """Atomic replace; whatever unsafe thing sits at the name is discarded first."""
    st = loc.lstat()
    if st is not None and not stat.S_ISDIR(st.st_mode):
        problem = "a symlink" if stat.S_ISLNK(st.st_mode) else _unsafe(st)
        if problem:
            _discard(loc, problem)
    atomic_write(loc, data)


# Characters a JSON state line must not hold raw: U+2028/U+2029 are legal JSON, but
# line-splitting readers (Python's str.splitlines, some log shippers) break a record in
# two there; a lone surrogate (from a non-UTF-8 file name, or a library caller) cannot
# be encoded as UTF-8 at all. Escaped, each reads back as the same character.
_UNSAFE_IN_LINES = re.compile("[\u2028\u2029\ud800-\udfff]")


def dumps(value: Any, indent: int | None = None) -> str:
    """JSON for a state file: readable (non-ASCII kept), one record per line, always UTF-8."""
    separators = None if indent else (",", ":")
    text = json.dumps(value, indent=indent, ensure_ascii=False, separators=separators)
    return _UNSAFE_IN_LINES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_json(ws: Workspace, value: Any, *parts: str) -> None:
    data = (dumps(value, indent=2) + "\n").encode("utf-8")
    with locate_state(ws, *parts, create_parents=True) as loc:
        _replace(loc, data)


def write_text(ws: Workspace, text: str, *parts: str) -> None:
    with locate_state(ws, *parts, create_parents=True) as loc:
        _replace(loc, text.encode("utf-8"))


def file_size(ws: Workspace, *parts: str) -> int | None:
    with _existing(ws, *parts) as loc:
        if loc is None:
            return None
        fd = open_state(loc, os.O_RDONLY, create=False)
        if fd is None:
            return None
        try:
            return os.fstat(fd).st_size
        finally:
            os.close(fd)


def read_text(ws: Workspace, *parts: str) -> str | None:
    with _existing(ws, *parts) as loc:
        data = None if loc is None else _read_state(loc)
    return None if data is None else data.decode("utf-8", "replace")


class JsonlStream:
    """An append-only JSON-lines file with one rotated predecessor (`<name>.1.jsonl`)."""

    def __init__(self, ws: Workspace, name: str, max_bytes: int) -> None:
        self.ws = ws
        self.current = f"{name}.jsonl"
        self.rotated = f"{name}.1.jsonl"
        self.max_bytes = max_bytes

    def append(self, record: dict[str, Any], *, locked: bool = False) -> int:
        """Append one record; returns the file's size after it (before any rotation)."""
        line = (dumps(record) + "\n").encode("utf-8")
        lock = contextlib.nullcontext() if locked else state_lock(self.ws)
        with (
            lock,
            locate_state(self.ws, self.current, create_parents=True) as loc,
        ):
            fd = open_state(loc, os.O_WRONLY | os.O_APPEND, create=True)
            assert fd is not None
            try:
                os.write(fd, line)
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if size > self.max_bytes:
                os.rename(loc.name, self.rotated, src_dir_fd=loc.dir_fd, dst_dir_fd=loc.dir_fd)
            return size

    def _window(self, name: str, end: int | None) -> tuple[list[tuple[int, dict[str, Any]]], int]:
        """(offset, record) pairs in the STATE_READ_BYTES before offset `end` (None: the
        file's end), oldest first, and the offset where the first whole line starts (0:
        the file's start was reached)."""
        try:
            with _existing(self.ws, name) as loc:
                if loc is None:
                    return [], 0
                fd = open_state(loc, os.O_RDONLY, create=False)
                if fd is None:
                    return [], 0
                try:
                    size = os.fstat(fd).st_size
                    stop = size if end is None else min(end, size)
                    start = max(0, stop - STATE_READ_BYTES)
                    data = os.pread(fd, stop - start, start)
                finally:
                    os.close(fd)
        except WorkspaceError:
            return [], 0
        lines = data.split(b"\n")
        window_start = start
        if start > 0 and lines:
            cut = lines[0]
            lines = lines[1:]  # the first line was cut by the read window
            # It is read whole by the next window; one longer than a window is skipped.
            start = start + len(cut) + 1 if lines else window_start
        records = []
        offset = start
        for raw in lines:
            at, offset = offset, offset + len(raw) + 1
            if not raw.strip():
                continue
            try:
                record = safejson.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append((at, record))
        return records, start

    def newest(
        self,
        limit: int,
        keep: Callable[[dict[str, Any]], bool] = lambda r: True,
        *,
        whole: bool = False,
    ) -> list[dict[str, Any]]:
        """Up to `limit` matching records, newest first: current file, then the rotated one.

        By default only the last STATE_READ_BYTES of each file are read (a view of recent
        work); `whole` reads both files back to their start, window by window, for answers
        that must be complete (one session's or change's calls, for undo): other agents'
        work can push a session's first calls out of the last window."""
        found: list[dict[str, Any]] = []
        for name in (self.current, self.rotated):
            end: int | None = None
            while True:
                records, start = self._window(name, end)
                for _, record in reversed(records):
                    if keep(record):
                        found.append(record)
                        if len(found) >= limit:
                            return found
                if not whole or start == 0:
                    break
                if end is not None and start >= end:
                    start = max(0, end - STATE_READ_BYTES)  # one line longer than a window
                end = start
        return found

    def page(
        self,
        before: int | None,
        limit: int,
        keep: Callable[[dict[str, Any]], bool] = lambda r: True,
    ) -> tuple[list[dict[str, Any]], int | None]:
        """Up to `limit` matching records of the current file older than offset `before`
        (None: from its end), newest first, and the cursor for the page after (None when
        the file's start was reached). Each step reads one bounded window."""
        found: list[dict[str, Any]] = []
        cursor = before
        while True:
            records, start = self._window(self.current, cursor)
            for at, record in reversed(records):
                if keep(record):
                    found.append(record)
                    if len(found) == limit:
                        return found, at if at > 0 else None
            if cursor is not None and start >= cursor:
                # The window held only the end of one line longer than a window: step
                # back past it (it is skipped, as by every reader of this file).
                start = max(0, cursor - STATE_READ_BYTES)
            if start == 0:
                return found, None
            cursor = start

    def mark(self) -> tuple[int, int, int] | None:
        """What changes when a record is appended (or the file rotates): for watchers
        that must not re-read the file to learn nothing happened."""
        try:
            with _existing(self.ws, self.current) as loc:
                st = None if loc is None else loc.lstat()
        except WorkspaceError:
            return None
        return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns)

    def count(self) -> int:
        """Lines in both files (what `remember` reports as the running total)."""
        total = 0
        for name in (self.current, self.rotated):
            with _existing(self.ws, name) as loc:
                data = None if loc is None else _read_state(loc)
            if data is None:
                continue
            total += sum(1 for line in data.split(b"\n") if line.strip())
        return total
